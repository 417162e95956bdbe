// SPDX-License-Identifier: GPL-2.0
/*
 * The JSON writer, byte for byte: icfabctl -j and icfabd --dump --json
 * both depend on its commas, escapes and line breaks.
 */
#include <stdint.h>
#include <stdlib.h>

#include <icfab/json.h>

#include "tap.h"

/* What @fn wrote, in a malloc()ed string. */
static char *written(void (*fn)(struct icfab_json *j))
{
	struct icfab_json j;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	json_init(&j, f);
	fn(&j);
	fclose(f);
	return buf;
}

static void members(struct icfab_json *j)
{
	json_begin_object(j, NULL);
	json_u64(j, "n", 18446744073709551615ULL);
	json_string(j, "s", "a\"b\\c\n\x7f");
	json_bool(j, "t", true);
	json_bool(j, "f", false);
	json_hex(j, "h", "\x01\xab", 2);
	json_begin_array(j, "a");
	json_u64(j, NULL, 1);
	json_begin_object(j, NULL);
	json_end_object(j);
	json_begin_array(j, NULL);
	json_end_array(j);
	json_end_array(j);
	json_end_object(j);
}

static void breaks(struct icfab_json *j)
{
	json_begin_object(j, NULL);
	json_u64(j, "x", 1);
	json_break(j);
	json_begin_array(j, "rows");
	json_break(j);
	json_u64(j, NULL, 2);
	json_break(j);
	json_u64(j, NULL, 3);
	json_end_array(j);
	json_end_object(j);
}

static void numbers(struct icfab_json *j)
{
	json_begin_object(j, NULL);
	json_s64(j, "neg", -125);
	json_s64(j, "min", INT64_MIN);
	json_fixed(j, "us", 123456789, 6);
	json_fixed(j, "small", 5, 6);
	json_fixed(j, "zero", 0, 3);
	json_end_object(j);
}

static void check(void (*fn)(struct icfab_json *j), const char *want,
		  const char *what)
{
	char *got = written(fn);

	ok(got && !strcmp(got, want), "%s", what);
	if (got && strcmp(got, want))
		diag("got %s", got);
	free(got);
}

int main(void)
{
	check(members,
	      "{\"n\":18446744073709551615,\"s\":\"a\\\"b\\\\c\\u000a\\u007f\","
	      "\"t\":true,\"f\":false,\"h\":\"01ab\",\"a\":[1,{},[]]}\n",
	      "members, escapes, nesting; a closed document ends its line");
	check(breaks, "{\"x\":1,\n\"rows\":[\n2,\n3]}\n",
	      "json_break(): the next value, after its comma, on a new line");
	check(numbers,
	      "{\"neg\":-125,\"min\":-9223372036854775808,\"us\":123.456789,"
	      "\"small\":0.000005,\"zero\":0.000}\n",
	      "signed numbers; fixed point with every decimal");
	return done();
}
