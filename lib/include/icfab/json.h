/* SPDX-License-Identifier: GPL-2.0 */
/* The JSON writer (lib/json.c). */
#ifndef ICFAB_JSON_H
#define ICFAB_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct icfab_json {
	FILE *f;
	int depth;
	bool need_comma[16];
	bool line_break;		/* the next value starts a line */
};

void json_init(struct icfab_json *j, FILE *f);
/* A NULL key: a value in an array. A closed document ends with '\n'. */
void json_begin_object(struct icfab_json *j, const char *key);
void json_end_object(struct icfab_json *j);
void json_begin_array(struct icfab_json *j, const char *key);
void json_end_array(struct icfab_json *j);
void json_u64(struct icfab_json *j, const char *key, uint64_t v);
void json_s64(struct icfab_json *j, const char *key, int64_t v);
/* @v / 10^@decimals, exact, with every decimal: (123456789, 6) "123.456789". */
void json_fixed(struct icfab_json *j, const char *key, uint64_t v,
		unsigned int decimals);
void json_string(struct icfab_json *j, const char *key, const char *s);
void json_bool(struct icfab_json *j, const char *key, bool v);
/* Bytes as a string of hex digits. */
void json_hex(struct icfab_json *j, const char *key, const void *data,
	      size_t len);
/* Put the next value (after its comma) on a new line. */
void json_break(struct icfab_json *j);

#endif /* ICFAB_JSON_H */
