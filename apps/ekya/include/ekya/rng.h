/* ekya/rng.h: the workload's own PRNG. splitmix64 derives independent seeds from
 * (seed, stream, window, purpose) tuples so that every window is reproducible on its
 * own; xoshiro256** then generates the numbers. Header-only because every file of
 * the module needs it and the functions are a few lines each. */
#ifndef EKYA_RNG_H
#define EKYA_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct {
    uint64_t s[4];
} ekya_rng;

/* splitmix64 step: advances *x and returns a well-mixed 64-bit value. */
static inline uint64_t ekya_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Hashes up to four values into one seed; different tuples give unrelated seeds. */
static inline uint64_t ekya_seed_mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    uint64_t x = a;
    uint64_t h = ekya_splitmix64(&x);
    x = h ^ b;
    h = ekya_splitmix64(&x);
    x = h ^ c;
    h = ekya_splitmix64(&x);
    x = h ^ d;
    return ekya_splitmix64(&x);
}

/* Seeds the generator's state from one 64-bit value (never all zero). */
static inline void ekya_rng_seed(ekya_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = ekya_splitmix64(&x);
}

static inline uint64_t ekya_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256**: next 64 random bits. */
static inline uint64_t ekya_rng_next(ekya_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = ekya_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ekya_rotl(s[3], 45);
    return out;
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline double ekya_rng_uniform(ekya_rng *r)
{
    return (double)(ekya_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n); n > 0. The modulo bias is below 2^-40 for the n used here. */
static inline uint32_t ekya_rng_below(ekya_rng *r, uint32_t n)
{
    return (uint32_t)(ekya_rng_next(r) % n);
}

/* Standard normal by Box-Muller (one of the pair; simplicity over speed). */
static inline double ekya_rng_normal(ekya_rng *r)
{
    double u1 = ekya_rng_uniform(r);
    double u2 = ekya_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Gamma(shape, 1) by Marsaglia-Tsang; shapes below one use the boost u^(1/shape). */
static inline double ekya_rng_gamma(ekya_rng *r, double shape)
{
    if (shape < 1.0) {
        double u = ekya_rng_uniform(r);
        return ekya_rng_gamma(r, shape + 1.0) * pow(u > 1e-300 ? u : 1e-300, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = ekya_rng_normal(r), v = 1.0 + c * x;
        if (v <= 0.0)
            continue;
        v = v * v * v;
        double u = ekya_rng_uniform(r);
        if (log(u > 1e-300 ? u : 1e-300) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

#endif
