// tiling.glsl - tile configurations of the shared-memory GEMM kernels.
// -DTILE=S|M|L|XL picks a block size; each invocation computes a TM x TN
// micro-tile of the BM x BN output block, stepping BK along K.
#ifndef TILING_GLSL
#define TILING_GLSL
#include "types.glsl"

//            BM           BN           BK           TM          TN
#define MM_BM_S 32
#define MM_BN_S 32
#define MM_BK_S 16
#define MM_TM_S 2
#define MM_TN_S 2

#define MM_BM_M 64
#define MM_BN_M 64
#define MM_BK_M 16
#define MM_TM_M 4
#define MM_TN_M 4

#define MM_BM_L 128
#define MM_BN_L 64
#define MM_BK_L 16
#define MM_TM_L 8
#define MM_TN_L 4

#define MM_BM_XL 128
#define MM_BN_XL 128
#define MM_BK_XL 32
#define MM_TM_XL 8
#define MM_TN_XL 8

#ifndef TILE
#define TILE M
#endif

#define BM KC_CAT(MM_BM_, TILE)
#define BN KC_CAT(MM_BN_, TILE)
#define BK KC_CAT(MM_BK_, TILE)
#define TM KC_CAT(MM_TM_, TILE)
#define TN KC_CAT(MM_TN_, TILE)
#define MM_THREADS ((BM / TM) * (BN / TN))
// Depth of the unrolled inner K step (divides every BK).
#ifndef BK_STEP
#define BK_STEP 8
#endif
// Padded row stride of the shared tiles (avoids bank conflicts).
#define SHMEM_STRIDE (BK + 1)

uint mm_div_up(uint a, uint b) { return (a + b - 1u) / b; }

#endif  // TILING_GLSL
