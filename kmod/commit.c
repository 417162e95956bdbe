// SPDX-License-Identifier: GPL-2.0
/*
 * icfab: the commit. Makes a configuration the committed one, for
 * FABRIC_COMMIT (genl_topo.c) and for fault injection (debugfs.c).
 *
 * Neither caller's error channel is assumed: a refusal is described in a
 * struct icfab_commit_err (a static message and the object at fault),
 * which netlink turns into the extack and debugfs logs.
 */
#include <linux/err.h>
#include <linux/overflow.h>

#include "icfab.h"

void icfab_commit_err_set(struct icfab_commit_err *cerr, const char *msg,
			  u32 obj, u32 id, u32 id2)
{
	cerr->msg = msg;
	cerr->has_cookie = true;
	cerr->cookie = (struct icfab_err_cookie){
		.obj = obj, .id = id, .id2 = id2,
	};
}

/*
 * A commit while contexts are attached (ICFAB_F_LIVE_COMMIT): @t must keep
 * every node, and is sized to the live engine's storage. On failure
 * @cerr says which node stops it.
 */
static int icfab_commit_live_check(struct icfab_fabric *fabric,
				   struct icfab_topo *t,
				   struct icfab_commit_err *cerr)
{
	const struct icfab_mtopo *m = &fabric->active->m;
	u32 node;
	int err;

	lockdep_assert_held(&fabric->lock);

	err = icfab_topo_live_check(fabric->active, t, &node);
	if (err) {
		if (node < ICFAB_MAX_NODES)
			icfab_commit_err_set(cerr,
					     "contexts are attached: a node would change (cookie: the node)",
					     ICFAB_ERR_OBJ_NODE, node, 0);
		else
			icfab_commit_err_set(cerr,
					     "contexts are attached: the segment size and time mode cannot change",
					     ICFAB_ERR_OBJ_NONE, node, 0);
		return err;
	}
	err = icfab_topo_set_caps(t, m->nodes_cap, m->links_cap);
	if (err == -E2BIG) {
		cerr->msg = "contexts are attached: a new link id is above those the engine was built for";
		return -EBUSY;
	}
	return err;
}

/*
 * Staged LINK_UP_DELAY_PS become absolute at @now, in two steps so that a
 * refusal changes nothing: first the check for overflow, then, once
 * nothing else can fail, the change.
 */
static int icfab_commit_holds_check(const struct icfab_topo *t, u64 now,
				    struct icfab_commit_err *cerr)
{
	u32 i;
	u64 at;

	for (i = 0; i < t->m.links_cap; i++) {
		const struct icfab_mlink *l = &t->m.links[i];

		if (!l->present || !l->up_delay_ps ||
		    !check_add_overflow(now, l->up_delay_ps, &at))
			continue;
		icfab_commit_err_set(cerr,
				     "link up delay overflows the fabric clock (cookie: the link)",
				     ICFAB_ERR_OBJ_LINK, i, 0);
		return -ERANGE;
	}
	return 0;
}

static void icfab_commit_holds(struct icfab_topo *t, u64 now)
{
	u32 i;

	for (i = 0; i < t->m.links_cap; i++) {
		struct icfab_mlink *l = &t->m.links[i];

		if (l->present && l->up_delay_ps) {
			l->up_at_ps = now + l->up_delay_ps;
			l->up_delay_ps = 0;
		}
	}
}

/*
 * Validate @t and make it the committed configuration, with the lock
 * held. @t is the staged configuration or, for fault injection
 * (kmod/debugfs.c), a private copy. While contexts are attached the
 * engine moves to @t (ICFAB_F_LIVE_COMMIT) and carries on from its
 * current time. Returns the configuration @t replaced, for the caller to
 * destroy after unlocking, or an ERR_PTR with @cerr filled in (its
 * message may stay NULL) and nothing changed.
 */
struct icfab_topo *__icfab_fabric_commit(struct icfab_fabric *fabric,
					 struct icfab_topo *t,
					 struct icfab_commit_err *cerr)
{
	struct icfab_topo_err verr;
	struct icfab_topo *old;
	bool live;
	u64 now;
	int err;

	lockdep_assert_held(&fabric->lock);

	/* The engine lives while contexts are attached. */
	live = fabric->nr_attached;
	if (live) {
		err = icfab_commit_live_check(fabric, t, cerr);
		if (err)
			return ERR_PTR(err);
	}

	err = icfab_topo_validate_commit(t, &verr);
	if (err) {
		/* The model's messages are static strings. */
		if (err == -EINVAL) {
			icfab_commit_err_set(cerr, verr.msg, verr.obj,
					     verr.id, verr.id2);
			cerr->cookie.id3 = verr.id3;
		}
		return ERR_PTR(err);
	}

	now = icfab_data_now(fabric);
	err = icfab_commit_holds_check(t, now, cerr);
	if (err)
		return ERR_PTR(err);

	/* Circuits must fit the new configuration (kmod/circuit.c). */
	err = icfab_circuits_commit(fabric, t, cerr);
	if (err)
		return ERR_PTR(err);

	/* Nothing fails from here on. */
	icfab_commit_holds(t, now);
	old = fabric->active;
	fabric->active = t;
	if (live)
		WARN_ON_ONCE(icfab_data_retopo(fabric, t));
	fabric->generation++;
	fabric->commit_ps = now;
	if (live)
		icfab_stats_keep(fabric);
	icfab_trace_link_states(fabric, old, t);
	if (live)
		icfab_data_kick(fabric);
	return old;
}
