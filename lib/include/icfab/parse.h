/* SPDX-License-Identifier: GPL-2.0 */
/* Command-line values the tools share (lib/parse.c). */
#ifndef ICFAB_PARSE_H
#define ICFAB_PARSE_H

#include <stdint.h>

/* A positive decimal byte count, with an optional K, M or G (binary). */
int icfab_parse_bytes(const char *s, uint64_t *out);

#endif /* ICFAB_PARSE_H */
