#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# icfabctl against the real module, in the test VM: the JSON agrees with
# the ioctl and netlink, kernel errors reach the user as text, a changed
# parameter is committed and seen by both interfaces and by a monitor, an
# unprivileged user is refused, and the topology commands (topo, node,
# link, route) show a topology staged by a raw-netlink helper below. TAP
# output.

top=$(cd "$(dirname "$0")/../../.." 2>/dev/null && pwd)
ctl=${ICFABCTL:-$top/build/bin/icfabctl}
tmp=$(mktemp -d)
trap 'kill $mon 2>/dev/null; rm -rf "$tmp"' EXIT
n=0
failed=0

. "$(dirname "$0")/lib.sh"	# check, for_nobody

json() {	# json FILE EXPR: evaluate a Python expression on FILE's JSON
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}

echo "TAP version 13"

"$ctl" -j info > "$tmp/info.json"
check "info -j: ABI 1, netlink feature, default parameters" \
	json "$tmp/info.json" 'd["abi_version"] == 1 and "netlink" in d["feature_names"] and d["segment_size"] == 4096 and d["time_mode"] == "virtual"'

"$ctl" -j fabric show > "$tmp/show.json"
check "fabric show -j: one fabric, same generation as info" \
	sh -c "python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(0 if len(a) == 1 and a[0][\"generation\"] == b[\"generation\"] else 1)' $tmp/show.json $tmp/info.json"

"$ctl" -j monitor > "$tmp/monitor.json" &
mon=$!
sleep 1

check "fabric set: accepted" "$ctl" fabric set segment-size 8192 dilation 7

"$ctl" -j info > "$tmp/info2.json"
check "info sees the change and a new generation" \
	json "$tmp/info2.json" 'd["segment_size"] == 8192 and d["dilation"] == 7 and d["generation"] >= 1'
check "info -j: the largest transfer at the new segment size" \
	json "$tmp/info2.json" 'd["limits"]["max_xfer_segments"] > 0 and d["limits"]["max_xfer_bytes"] == d["limits"]["max_xfer_segments"] * 8192'

"$ctl" fabric set segment-size 10 2> "$tmp/err" > /dev/null
rc=$?
check "out-of-range value: exit 1" test $rc -eq 1
check "out-of-range value: the kernel's message is shown" \
	grep -q "kernel reports: integer out of range" "$tmp/err"
check "out-of-range value: nothing changed" \
	sh -c "'$ctl' -j info | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)[\"segment_size\"] == 8192 else 1)'"

check "unknown keyword: usage error (exit 2), nothing sent" \
	sh -c "'$ctl' fabric set segment-sise 8192 2>/dev/null; test \$? -eq 2"

check "unprivileged fabric set: refused" \
	sh -c "setpriv --reuid=65534 --regid=65534 --clear-groups '$(for_nobody "$ctl")' fabric set segment-size 4096 2>&1 | grep -q 'Operation not permitted'"

"$ctl" fabric set segment-size 4096 dilation 1
sleep 1
kill $mon 2>/dev/null
wait $mon 2>/dev/null
check "monitor saw both changes, in order" \
	python3 -c 'import json,sys
ev=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
seg=[e["segment_size"] for e in ev]
sys.exit(0 if seg[-2:] == [8192, 4096] else 1)' "$tmp/monitor.json"

# ---- topology ----

# A raw generic netlink client (python3 stdlib only) that stages and
# commits topologies: icfabctl only reads them. Numbers from
# uapi/linux/icfab_genl.h, which only ever appends.
cat > "$tmp/topo.py" <<'PY'
import os, socket, struct, subprocess, sys

FABRIC_GET, NODE_NEW, NODE_DEL, NODE_GET = 1, 4, 5, 6
LINK_NEW, LINK_DEL, LINK_GET = 7, 8, 10
ROUTE_SET, COMMIT, ABORT = 11, 13, 14
A_NODE_ID, A_NODE_KIND, A_NODE_NAME, A_NODE_PORTS = 17, 18, 19, 20
A_NODE_MEM, A_NODE_DMA, A_NODE_COLORS = 21, 22, 23
A_LINK_ID, A_SRC, A_SPORT, A_DST, A_DPORT = 24, 25, 26, 27, 28
A_BW, A_LAT, A_CLASS, A_STATE, A_PERMILLE = 29, 30, 31, 32, 33
A_ROUTE_NODE, A_DST_FIRST, A_PORTS = 34, 35, 36
ENDPOINT, SWITCH = 0, 1
CLASS_PCIE, CLASS_ICI = 2, 4
DEGRADED = 2
NONE = 0xffff
GB = 1000 ** 3


def nla(t, data):
    n = 4 + len(data)
    return struct.pack("HH", n, t) + data + b"\0" * (-n % 4)


def u32(t, v):
    return nla(t, struct.pack("I", v))


def u64(t, v):
    return nla(t, struct.pack("Q", v))


def attrs(data):
    out, off = {}, 0
    while off + 4 <= len(data):
        n, t = struct.unpack_from("HH", data, off)
        out[t & 0x3fff] = data[off + 4:off + n]
        off += (n + 3) & ~3
    return out


class Genl:
    def __init__(self):
        self.sk = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)
        self.sk.bind((0, 0))
        self.sk.setsockopt(270, 11, 1)          # NETLINK_EXT_ACK
        self.seq = 0
        self.extack = ""
        err, replies = self.request(0x10, 3, nla(2, b"icfab\0"), ctrl=True)
        assert err == 0, "icfab family not found"
        self.family = struct.unpack("H", attrs(replies[0][20:])[1][:2])[0]

    def request(self, fam, cmd, payload=b"", ctrl=False, flags=0):
        """Send one request with NLM_F_ACK: (0 or -errno, replies)."""
        self.seq += 1
        body = struct.pack("BBH", cmd, 1, 0) + payload
        self.sk.send(struct.pack("IHHII", 16 + len(body), fam,
                                 1 | 4 | flags, self.seq, 0) + body)
        replies = []
        while True:
            data = self.sk.recv(65536)
            off = 0
            while off < len(data):
                n, typ, flags, seq, _ = struct.unpack_from("IHHII", data, off)
                msg = data[off:off + n]
                off += (n + 3) & ~3
                if seq != self.seq:
                    continue
                if typ == 2:                    # NLMSG_ERROR
                    err = struct.unpack_from("i", msg, 16)[0]
                    self.extack = ""
                    if flags & 0x200:           # NLM_F_ACK_TLVS
                        inner = 16 if flags & 0x100 else \
                            struct.unpack_from("I", msg, 20)[0]
                        tlv = attrs(msg[20 + inner:])
                        self.extack = tlv.get(1, b"").rstrip(b"\0").decode()
                    return err, replies
                if typ == 3:                    # NLMSG_DONE
                    return 0, replies
                replies.append(msg)

    def do(self, cmd, payload=b""):
        err, _ = self.request(self.family, cmd, payload)
        if err:
            raise SystemExit("topo.py: cmd %d: %s (%s)" %
                             (cmd, os.strerror(-err), self.extack))

    def node(self, i, kind, ports, name):
        p = u32(A_NODE_ID, i) + u32(A_NODE_KIND, kind) + \
            u32(A_NODE_PORTS, ports) + nla(A_NODE_NAME, name.encode() + b"\0")
        if kind == ENDPOINT:
            p += u64(A_NODE_MEM, 16 << 30) + u32(A_NODE_DMA, 4)
        else:
            p += u32(A_NODE_COLORS, 64)
        self.do(NODE_NEW, p)

    def link(self, i, src, sport, dst, dport, bw, lat=500000, cls=CLASS_ICI,
             permille=None):
        p = u32(A_LINK_ID, i) + u32(A_SRC, src) + u32(A_SPORT, sport) + \
            u32(A_DST, dst) + u32(A_DPORT, dport) + u64(A_BW, bw) + \
            u64(A_LAT, lat) + u32(A_CLASS, cls)
        if permille:
            p += u32(A_STATE, DEGRADED) + u32(A_PERMILLE, permille)
        self.do(LINK_NEW, p)

    def routes(self, node, ports):
        self.do(ROUTE_SET, u32(A_ROUTE_NODE, node) + u32(A_DST_FIRST, 0) +
                nla(A_PORTS, struct.pack("%dH" % len(ports), *ports)))

    def ids(self, cmd, attr):
        """The ids a NODE_GET or LINK_GET dump of the committed config has."""
        err, replies = self.request(self.family, cmd, flags=0x300)
        assert err == 0, "dump %d: %s" % (cmd, os.strerror(-err))
        return [struct.unpack("I", attrs(m[20:])[attr])[0] for m in replies]

    def clear(self):
        """Stage an empty topology (over whatever is committed)."""
        self.request(self.family, ABORT)
        for i in self.ids(LINK_GET, A_LINK_ID):
            self.do(LINK_DEL, u32(A_LINK_ID, i))
        for i in self.ids(NODE_GET, A_NODE_ID):
            self.do(NODE_DEL, u32(A_NODE_ID, i))


def ring(g):
    """
    chip0..chip3 in a ring (port 0 to the next chip, port 1 to the
    previous; link 2i is i -> i+1, 2i+1 the way back), routes the short
    way round (clockwise on ties), and a switch sw0 joined to every chip's
    port 2 (links 8..15) that routes nothing. Link 0 runs at 50 GB/s,
    link 2 (chip1 -> chip2) at 100 GB/s degraded to 400 permille, the
    others at 200 GB/s.
    """
    g.clear()
    for i in range(4):
        g.node(i, ENDPOINT, 3, "chip%d" % i)
    g.node(4, SWITCH, 4, "sw0")
    for i in range(4):
        g.link(2 * i, i, 0, (i + 1) % 4, 1,
               50 * GB if i == 0 else 100 * GB if i == 1 else 200 * GB,
               permille=400 if i == 1 else None)
        g.link(2 * i + 1, (i + 1) % 4, 1, i, 0, 200 * GB)
        g.link(8 + 2 * i, i, 2, 4, i, 64 * GB, 100000, CLASS_PCIE)
        g.link(9 + 2 * i, 4, i, i, 2, 64 * GB, 100000, CLASS_PCIE)
    for i in range(4):
        ports = []
        for d in range(5):
            cw = (d - i) % 4
            ports.append(NONE if d == i or d == 4 else
                         0 if cw <= 4 - cw else 1)
        g.routes(i, ports)


def loop(g):
    """The ring, plus a loop towards chip2: chip1 sends it back to chip0."""
    ring(g)
    g.routes(1, [1, NONE, 1, 0, NONE])


g = Genl()
what = sys.argv[1]
if what == "ring":
    ring(g)
    g.do(COMMIT)
elif what == "clear":
    g.clear()
    g.do(COMMIT)
elif what == "hold":
    # hold ring|loop|extra CMD...: run CMD while this socket holds a
    # staged configuration; exit with CMD's status.
    {"ring": ring, "loop": loop,
     "extra": lambda g: g.node(5, ENDPOINT, 1, "extra")}[sys.argv[2]](g)
    rc = subprocess.call(sys.argv[3:])
    g.request(g.family, ABORT)
    sys.exit(rc)
PY

topo() {
	python3 "$tmp/topo.py" "$@"
}

check "topology helper: a ring of 4 chips and a switch is committed" topo ring

"$ctl" -j fabric show > "$tmp/fab.json"
"$ctl" -j topo show > "$tmp/topo.json"
check "topo show -j: 5 nodes, 16 links, counts, same generation as fabric show" \
	python3 -c 'import json,sys
t=json.load(open(sys.argv[1])); f=json.load(open(sys.argv[2]))[0]
ok = (len(t["nodes"]) == 5 and len(t["links"]) == 16 and
      t["nr_endpoints"] == 4 and t["nr_switches"] == 1 and t["nr_links"] == 16 and
      t["generation"] == f["generation"] and t["mem_bytes"] == f["mem_bytes"] > 0 and
      t["staged"] is False and t["has_staged"] is False)
sys.exit(0 if ok else 1)' "$tmp/topo.json" "$tmp/fab.json"
check "topo show -j: nodes and links by name, kind, class and state" \
	json "$tmp/topo.json" '[n["name"] for n in d["nodes"]] == ["chip0", "chip1", "chip2", "chip3", "sw0"] and d["nodes"][4]["kind"] == "switch" and d["nodes"][4]["colors"] == 64 and d["nodes"][0]["mem_bytes"] == 16 << 30 and d["links"][0]["src_name"] == "chip0" and d["links"][0]["dst_name"] == "chip1" and d["links"][0]["class"] == "ici" and d["links"][8]["class"] == "pcie" and d["links"][2]["state"] == "degraded" and d["links"][2]["bw_permille"] == 400'

"$ctl" topo show > "$tmp/topo.txt"
check "topo show: summary, nodes and links for people" \
	sh -c "grep -q '4 endpoints, 1 switch, 16 links, tables ' '$tmp/topo.txt' &&
	       grep -Eq '^ +4 +sw0 +switch +4 +- +- +64$' '$tmp/topo.txt' &&
	       grep -Eq '^ +1 +chip1 +endpoint +3 +16 GiB +4 +-$' '$tmp/topo.txt' &&
	       grep -Eq '^ +2 +chip1:0 +-> chip2:1 +100 GB/s +500 ns +ici +degraded 400‰$' '$tmp/topo.txt'"

"$ctl" node list > "$tmp/nodes.txt"
check "node list: a header and one row per node" \
	sh -c "test \$(wc -l < '$tmp/nodes.txt') -eq 6 && head -1 '$tmp/nodes.txt' | grep -q '^ID  *NAME  *KIND  *PORTS'"

"$ctl" link list > "$tmp/links.txt"
check "link list: a header and one aligned row per link" \
	sh -c "test \$(wc -l < '$tmp/links.txt') -eq 17 &&
	       grep -Eq '^ *0  +chip0:0 -> chip1:1  +50 GB/s  +500 ns  +ici  +up$' '$tmp/links.txt' &&
	       grep -Eq '^ *9  +sw0:0   -> chip0:2  +64 GB/s  +100 ns  +pcie  +up$' '$tmp/links.txt' &&
	       test \$(awk '{ print index(\$0, \"GB/s\") }' '$tmp/links.txt' | sort -u | grep -vc '^0$') -eq 1"

"$ctl" -j link list > "$tmp/links.json"
check "link list -j: every link, with the generation" \
	json "$tmp/links.json" 'len(d["links"]) == 16 and d["generation"] > 0 and [l["id"] for l in d["links"]] == list(range(16))'

"$ctl" route show chip0 chip2 > "$tmp/route.txt"
rc=$?
check "route show chip0 chip2: two hops and a total" \
	sh -c "test $rc -eq 0 &&
	       grep -Eq '^  chip0:0 -> chip1:1  +50 GB/s  +500 ns  +ici  +up$' '$tmp/route.txt' &&
	       grep -Eq '^  chip1:0 -> chip2:1  +100 GB/s  +500 ns  +ici  +degraded 400‰$' '$tmp/route.txt' &&
	       grep -qx '2 hops, latency 1 us, bottleneck 40 GB/s' '$tmp/route.txt'"

"$ctl" -j route show 0 chip3 > "$tmp/route.json"
check "route show -j by id: chip0 to chip3 is one hop back round the ring" \
	json "$tmp/route.json" 'd["src_name"] == "chip0" and d["dst"] == 3 and d["nr_hops"] == 1 and d["hops"][0]["id"] == 7 and d["hops"][0]["src_port"] == 1 and d["latency_ps"] == 500000 and d["bottleneck_bandwidth"] == 200 * 10**9'

"$ctl" route show chip0 nosuch > /dev/null 2> "$tmp/err"
rc=$?
check "route show to an unknown node: exit 1 and a message" \
	sh -c "test $rc -eq 1 && grep -q \"no node 'nosuch'\" '$tmp/err'"

"$ctl" route show sw0 chip1 > /dev/null 2> "$tmp/err"
rc=$?
check "route show from a node without a table: no route, exit 1" \
	sh -c "test $rc -eq 1 && grep -q 'no route from sw0 to chip1' '$tmp/err'"

"$ctl" route show chip0 sw0 > /dev/null 2> "$tmp/err"
rc=$?
check "route show to a switch: no route, and why" \
	sh -c "test $rc -eq 1 && grep -q 'no route from chip0 to sw0' '$tmp/err' && grep -q 'only endpoints are destinations' '$tmp/err'"

topo hold loop "$ctl" route show --staged chip0 chip2 > /dev/null 2> "$tmp/err"
rc=$?
check "route show --staged: a staged routing loop is caught" \
	sh -c "test $rc -eq 1 && grep -q 'routing loop' '$tmp/err'"

topo hold extra "$ctl" -j topo show --staged > "$tmp/staged.json"
check "topo show --staged: the staged node is there" \
	json "$tmp/staged.json" 'len(d["nodes"]) == 6 and d["nodes"][5]["name"] == "extra" and d["staged"] is True and d["has_staged"] is True'

topo hold extra "$ctl" -j fabric show > "$tmp/fab2.json"
check "fabric show -j while another socket stages: has_staged" \
	json "$tmp/fab2.json" 'd[0]["has_staged"] is True and d[0]["nr_endpoints"] == 4'

topo hold extra "$ctl" fabric set dilation 3 > /dev/null 2> "$tmp/err"
rc=$?
check "fabric set while another socket stages: exit 1, the kernel says why" \
	sh -c "test $rc -eq 1 && grep -q 'kernel reports: another socket is staging a configuration' '$tmp/err'"

"$ctl" fabric set dilation 5 && "$ctl" fabric show > "$tmp/fab.txt"
check "fabric set commits: nothing left staged, the topology kept" \
	sh -c "grep -Eq '^	dilation: +5$' '$tmp/fab.txt' && grep -Eq '^	staged: +no$' '$tmp/fab.txt' &&
	       grep -Eq '^	memory: +[0-9.]+ (bytes|KiB|MiB)' '$tmp/fab.txt' && grep -Eq '^	endpoints: +4$' '$tmp/fab.txt'"
"$ctl" fabric set dilation 1

check "-f: an unknown fabric is refused by the kernel" \
	sh -c "'$ctl' -f 77 topo show 2>&1 >/dev/null | grep -q 'kernel reports: no fabric with this id'"

check "topology helper: an empty topology is committed" topo clear
"$ctl" -j topo show > "$tmp/empty.json"
check "topo show -j: empty" \
	json "$tmp/empty.json" 'd["nodes"] == [] and d["links"] == [] and d["nr_endpoints"] == 0'

# ctx list and evict; ctx_test.c checks them with contexts attached.
check "ctx list: nothing attached" \
	sh -c "'$ctl' ctx list | grep -qx 'no contexts attached'"
"$ctl" -j ctx list > "$tmp/ctx.json"
check "ctx list -j: an empty array" json "$tmp/ctx.json" 'd["contexts"] == []'
"$ctl" ctx evict 999 > /dev/null 2> "$tmp/err"
rc=$?
check "ctx evict of no context: exit 1, the kernel says why" \
	sh -c "test $rc -eq 1 && grep -q 'kernel reports: no context with this id is attached' '$tmp/err'"
check "ctx evict without an id: usage error (exit 2)" \
	sh -c "'$ctl' ctx evict 2>/dev/null; test \$? -eq 2"

echo "1..$n"
exit $failed
