// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * MoE layout: what a dispatch would send, from the routing alone (DeepEP's
 * get_dispatch_layout). A token counts once per rank, however many of its
 * experts that rank owns, and once per expert it picks.
 */
#include <errno.h>
#include <string.h>

#include "moe.h"

/* Pick @j of a token is the first of its picks on expert rank @d. */
static int first_pick_on_rank(const int64_t *picks, unsigned int j,
			      unsigned int experts_per_rank, unsigned int d)
{
	for (unsigned int q = 0; q < j; q++)
		if (picks[q] >= 0 && (unsigned int)picks[q] / experts_per_rank == d)
			return 0;
	return 1;
}

static int check_layout(const int64_t *topk_idx, uint64_t tokens,
			unsigned int k, unsigned int num_experts,
			unsigned int nranks,
			const struct fdev_moe_layout_out *out)
{
	if ((!topk_idx && tokens) || !out || !k || !nranks || !num_experts ||
	    num_experts % nranks)
		return -EINVAL;
	for (uint64_t i = 0; i < tokens * k; i++)
		if (topk_idx[i] < -1 || topk_idx[i] >= num_experts)
			return -EINVAL;
	return 0;
}

int fdev_moe_layout(const int64_t *topk_idx, uint64_t tokens, unsigned int k,
		    unsigned int num_experts, unsigned int nranks,
		    struct fdev_moe_layout_out *out)
{
	unsigned int experts_per_rank;
	int err;

	err = check_layout(topk_idx, tokens, k, num_experts, nranks, out);
	if (err)
		return err;
	experts_per_rank = num_experts / nranks;
	if (out->tokens_per_rank)
		memset(out->tokens_per_rank, 0, nranks * 8);
	if (out->tokens_per_expert)
		memset(out->tokens_per_expert, 0, num_experts * 8ULL);
	if (out->token_in_rank)
		memset(out->token_in_rank, 0, tokens * nranks);
	for (uint64_t t = 0; t < tokens; t++) {
		const int64_t *picks = topk_idx + t * k;

		for (unsigned int j = 0; j < k; j++) {
			unsigned int d;

			if (picks[j] < 0)
				continue;
			d = (unsigned int)picks[j] / experts_per_rank;
			if (out->tokens_per_expert)
				out->tokens_per_expert[picks[j]]++;
			if (!first_pick_on_rank(picks, j, experts_per_rank, d))
				continue;
			if (out->tokens_per_rank)
				out->tokens_per_rank[d]++;
			if (out->token_in_rank)
				out->token_in_rank[t * nranks + d] = 1;
		}
	}
	return 0;
}
