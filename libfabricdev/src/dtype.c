// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/* Element types: sizes and conversions (round to nearest even). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fabricdev.h"

size_t fdev_dtype_size(enum fdev_dtype dt)
{
	switch (dt) {
	case FDEV_U8: case FDEV_FP8_E4M3: return 1;
	case FDEV_BF16: case FDEV_F16: return 2;
	case FDEV_F32: case FDEV_I32: return 4;
	case FDEV_I64: return 8;
	}
	return 0;
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

float fdev_bf16_to_f32(uint16_t v)
{
	return from_bits((uint32_t)v << 16);
}

uint16_t fdev_f32_to_bf16(float f)
{
	uint32_t u = bits(f);

	if ((u & 0x7fffffff) > 0x7f800000)	/* NaN stays a quiet NaN */
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

float fdev_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;

	if (exp == 0x1f)
		return from_bits(sign | 0x7f800000 | man << 13);
	if (!exp) {
		float f = ldexpf((float)man, -24);

		return sign ? -f : f;
	}
	return from_bits(sign | (exp + 112) << 23 | man << 13);
}

uint16_t fdev_f32_to_f16(float f)
{
	uint32_t u = bits(f), sign = (u >> 16) & 0x8000;
	int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
	uint32_t man = u & 0x7fffff;

	if (((u >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	if (exp >= 0x1f)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		/* Subnormal: value = man' * 2^-24, rounded to nearest even. */
		float a = fabsf(f) * 16777216.0f;
		uint32_t m = (uint32_t)nearbyintf(a);

		return (uint16_t)(sign | m);	/* m == 0x400: smallest normal */
	}
	{
		uint32_t r = (uint32_t)exp << 10 | man >> 13;
		uint32_t rest = man & 0x1fff;

		if (rest > 0x1000 || (rest == 0x1000 && (r & 1)))
			r++;			/* may carry into the exponent */
		return (uint16_t)(sign | r);
	}
}

/* OCP FP8 E4M3 (the "fn" variant): no infinities, 0x7f/0xff are NaN, max 448. */
float fdev_fp8_to_f32(uint8_t v)
{
	uint32_t sign = v & 0x80, exp = (v >> 3) & 0xf, man = v & 7;
	float f;

	if (exp == 0xf && man == 7)
		return NAN;
	if (!exp)
		f = ldexpf((float)man, -9);
	else
		f = ldexpf((float)(8 + man), (int)exp - 10);
	return sign ? -f : f;
}

uint8_t fdev_f32_to_fp8(float f)
{
	uint8_t sign = signbit(f) ? 0x80 : 0, best = 0;
	float a = fabsf(f), err = INFINITY;

	if (isnan(f))
		return 0x7f;
	if (a >= 448.0f)
		return sign | 0x7e;		/* saturate */
	/* 127 finite magnitudes: pick the nearest, ties to even code. */
	for (uint8_t c = 0; c < 0x7f; c++) {
		float e = fabsf(fdev_fp8_to_f32(c) - a);

		if (e < err || (e == err && !(c & 1))) {
			err = e;
			best = c;
		}
	}
	return sign | best;
}
