/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Optical circuit switches (after TPU v4): validating a reconfiguration
 * request and planning it. Pure logic; applying the plan (links down at T,
 * new links up at T + delay, routes recomputed, events, hold/fail for the
 * traffic caught in between) is the daemon's and the module's job.
 *
 * Model. An OCS has nr_ports input ports and as many output ports. Its
 * permutation connects input i to output perm[i]. Each port is the far end
 * of a fibre from one node port:
 *
 *	in[i]  = (node, port) cabled to input i	   ("A side")
 *	out[j] = (node, port) cabled to output j   ("B side")
 *
 * so OCS circuit i is, in the topology, the duplex link pair
 *
 *	in[i].node:in[i].port  <->  out[perm[i]].node:out[perm[i]].port
 *
 * of class ocs (topo_add_link() twice, or a duplex "links:" entry; the
 * torus generator's block_link makes exactly these). The OCS itself is not
 * a node: light passes through it, it neither forwards nor queues, so the
 * topology only sees the resulting point-to-point cables.
 *
 * A reconfiguration to perm' changes the circuits of the input ports with
 * perm'[i] != perm[i] and no others: at T their link pairs go down, at
 * T + reconfig_delay_ps the pairs in[i] <-> out[perm'[i]] come up (each
 * with the bandwidth, latency and class of the pair it replaces). Times
 * are fabric ps; the delay may be anything from 0 to minutes (5 min =
 * 3e14 ps, far inside u64); T + delay overflowing u64 is refused.
 */
#ifndef ICFABD_OCS_H
#define ICFABD_OCS_H

#include <stdbool.h>
#include <stdint.h>

#include "topo.h"

/* What traffic that needs a link being reconfigured does. */
enum ocs_policy {
	OCS_POLICY_HOLD,		/* wait; the completion shows the wait */
	OCS_POLICY_FAIL,		/* complete with an errno */
};

struct ocs_end {
	uint32_t node;			/* topo node id */
	uint32_t port;			/* that node's port */
};

struct ocs {
	char name[ICFAB_NAME_MAX];
	uint32_t nr_ports;
	uint64_t reconfig_delay_ps;	/* ps */
	enum ocs_policy policy;
	struct ocs_end *in;		/* nr_ports, or NULL: not on a topo */
	struct ocs_end *out;		/* nr_ports, or NULL */
	uint32_t perm[];		/* input i -> output perm[i] */
};

struct ocs_desc {
	const char *name;
	uint32_t nr_ports;		/* >= 1 */
	const uint32_t *perm;		/* NULL: identity */
	uint64_t reconfig_delay_ps;	/* ps */
	enum ocs_policy policy;
	const struct ocs_end *in;	/* both or neither */
	const struct ocs_end *out;
};

/* One input port whose circuit changes. */
struct ocs_change {
	uint32_t port;			/* input port */
	uint32_t from;			/* output port before */
	uint32_t to;			/* output port after */
};

struct ocs_plan {
	bool noop;			/* same permutation: nothing happens */
	enum ocs_policy policy;		/* the OCS's, for the traffic caught */
	uint64_t delay_ps;		/* ps */
	uint64_t t_down_ps;		/* T: changed circuits go down, ps */
	uint64_t t_up_ps;		/* T + delay: new ones up (T if noop), ps */
	uint32_t nr_ports;
	uint32_t *perm;			/* the new permutation */
	uint32_t nr_changes;
	struct ocs_change *changes;	/* ascending input port */
};

/* A directed link to create, for the circuit of input port `port`. */
struct ocs_new_link {
	uint32_t port;
	uint32_t src_node, src_port;
	uint32_t dst_node, dst_port;
	struct topo_link_spec spec;	/* as the link it replaces */
};

struct ocs_link_plan {
	uint32_t nr_down;
	uint32_t *down;			/* link ids: both directions of each
					 * changed circuit, by port */
	uint32_t nr_up;
	struct ocs_new_link *up;	/* A->B then B->A, by port */
};

int ocs_new(const struct ocs_desc *d, struct ocs **op, struct topo_err *err);
void ocs_free(struct ocs *o);
const char *ocs_policy_name(enum ocs_policy p);
int ocs_policy_parse(const char *s);

/*
 * Is perm[0..len) a permutation of o's ports? 0, or -EINVAL with:
 *	"ocs NAME: the permutation has 7 entries, the OCS has 8 ports"
 *	"ocs NAME: port 3 -> 9: no output port 9 (ports 0..7)"
 *	"ocs NAME: port 5 -> 2: output 2 is already the target of port 1"
 */
int ocs_perm_check(const struct ocs *o, const uint32_t *perm, uint32_t len,
		   struct topo_err *err);

/*
 * A partial request, input -> output pairs, applied to the current
 * permutation into perm_out[nr_ports]; the result must be a permutation
 * (so moving one circuit means naming the other one it displaces).
 *	"ocs NAME: pairs[2]: no input port 9 (ports 0..7)"
 *	"ocs NAME: pairs[3]: input port 2 is also in pairs[0]"
 */
struct ocs_pair {
	uint32_t in, out;
};
int ocs_perm_from_pairs(const struct ocs *o, const struct ocs_pair *pairs,
			uint32_t nr_pairs, uint32_t *perm_out,
			struct topo_err *err);

/*
 * Plan the move to perm starting at fabric time t_ps: validates (as
 * ocs_perm_check), lists the changed ports and the phase times. -EOVERFLOW
 * when t_ps + delay does not fit in u64. Changes nothing in o.
 */
int ocs_plan(const struct ocs *o, const uint32_t *perm, uint32_t len,
	     uint64_t t_ps, struct ocs_plan *plan, struct topo_err *err);
void ocs_plan_free(struct ocs_plan *plan);
/* The reconfiguration happened: o takes the plan's permutation. */
int ocs_commit(struct ocs *o, const struct ocs_plan *plan);

/*
 * Does the topology hold o's current circuits? Each port's A side must
 * send a class-ocs link to its B side (per perm), with a peer coming back.
 * 0, or -ENOENT / -EINVAL with "ocs NAME: port 3: ...".
 */
int ocs_check_topo(const struct topo *t, const struct ocs *o,
		   struct topo_err *err);
/* The topology side of a plan: link ids to take down, links to create. */
int ocs_plan_links(const struct topo *t, const struct ocs *o,
		   const struct ocs_plan *plan, struct ocs_link_plan *lp,
		   struct topo_err *err);
void ocs_link_plan_free(struct ocs_link_plan *lp);

#endif /* ICFABD_OCS_H */
