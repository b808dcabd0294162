// Constants of FORMAT.md shared by the writer, the reader and the digest.
#pragma once

#include <cstddef>
#include <string_view>

namespace kcache::deploy::detail {

/// What the signature signs before head bytes [0, 128) (FORMAT.md "Head").
inline constexpr std::string_view k_signature_domain{"kcache deployment file signature 1\0", 35};
/// What the digest hashes first (FORMAT.md "Digest").
inline constexpr std::string_view k_digest_domain{"kcache deployment file digest 1\0", 32};
/// Head bytes the digest covers: everything before the digest field.
inline constexpr std::size_t k_digested_head = 96;
/// Head offsets of the digest, signer and signature fields.
inline constexpr std::size_t k_digest_at = 96;
inline constexpr std::size_t k_signer_at = 128;
inline constexpr std::size_t k_signature_at = 160;
/// A cubin's first bytes: an ELF image.
inline constexpr std::string_view k_elf_magic{
    "\x7f"
    "ELF",
    4};

}  // namespace kcache::deploy::detail
