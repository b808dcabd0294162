// Writing a store's LMDB databases directly, as a damaged or foreign store
// would hold them: for tests of what kcache does with records it did not
// write. Include only in tests that link LMDB (store, runtime).
#pragma once

#include <doctest/doctest.h>
#include <lmdb.h>

#include <filesystem>
#include <string_view>

namespace kcache::test {

/// Writes `value` under `key` of database `db` (created if missing) with the
/// raw LMDB API. No kcache Store may be open on `dir`.
inline void raw_put(const std::filesystem::path& dir, const char* db, std::string_view key, std::string_view value) {
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_maxdbs(env, 8) == 0);
  REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0664) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
  MDB_dbi dbi = 0;
  REQUIRE(mdb_dbi_open(txn, db, MDB_CREATE, &dbi) == 0);
  MDB_val k{key.size(), const_cast<char*>(key.data())}, v{value.size(), const_cast<char*>(value.data())};
  REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
  REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
}

}  // namespace kcache::test
