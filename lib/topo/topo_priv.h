/* SPDX-License-Identifier: GPL-2.0 */
/* Shared between the topology library's files; not for its users. */
#ifndef ICFABD_TOPO_PRIV_H
#define ICFABD_TOPO_PRIV_H

#include <icfab/topo.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * (node, port) -> outgoing link: out[base[node] + port], TOPO_NONE when the
 * port sends nothing. When two links leave the same port the first one is
 * kept; *conflict (if not NULL) gets the second one's id, else TOPO_NONE.
 */
struct topo_ports {
	uint32_t *base;			/* nr_nodes + 1 */
	uint32_t *out;
	uint32_t *in;			/* same, for the link arriving at a port */
};

int topo_ports_build(const struct topo *t, struct topo_ports *p,
		     uint32_t *out_conflict, uint32_t *in_conflict);
void topo_ports_free(struct topo_ports *p);

static inline bool topo_link_usable(const struct topo_link *l)
{
	return l->state != ICFAB_LINK_DOWN;
}

#endif /* ICFABD_TOPO_PRIV_H */
