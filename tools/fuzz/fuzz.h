/* SPDX-License-Identifier: GPL-2.0 */
/* What the libFuzzer harnesses share. */
#ifndef ICFAB_FUZZ_H
#define ICFAB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * An invariant. When it does not hold: "file.c:LINE: cond", then the
 * optional printf-style detail, and abort() for libFuzzer to report.
 */
#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: %s: ", __FILE__,	\
				__LINE__, #cond);			\
			fprintf(stderr, "" __VA_ARGS__);		\
			fputc('\n', stderr);				\
			abort();					\
		}							\
	} while (0)

#endif /* ICFAB_FUZZ_H */
