// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The "icfab" torch.distributed backend: a c10d::ProcessGroup whose
 * collectives run on libfabricdev's communicator, one process per rank.
 *
 * Every op runs to completion in the calling thread and returns a Work
 * that is already complete (async_op=True included), so wait() only
 * reports. Tensors are staged through the communicator's device-memory
 * workspace: one copy in, one copy out (plus one to make a
 * non-contiguous tensor contiguous); those that empty_bytes() made live
 * in device memory, registered with the communicator, and
 * all_to_all_single, a SUM/AVG all_reduce, _allgather_base,
 * _reduce_scatter_base and broadcast use them where they are
 * (libfabricdev's zero copy). Ops libfabricdev has no collective
 * for are built from ones it has, so their bytes still cross the fabric:
 * MAX/MIN/PRODUCT (and SUM of 8-bit integers and float64) are an
 * all-gather and a local reduction.
 *
 * Groups: the first icfab group of a process opens a communicator; a
 * later group of the same size (new_group() of every rank) shares it. A
 * group of fewer ranks opens a sub-communicator of it
 * (fdev_comm_init_sub()): its ranks on their endpoints in the first,
 * in the same context, so its ops cross the fabric too. Where that
 * cannot be (rank 0's proxy; an earlier default group's communicator
 * still held) the group runs over the c10d Store instead (correct
 * bytes, no fabric time) and says why (store_reason()). send/recv go
 * through the Store too: the library has no point-to-point op.
 */
#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <fabricdev.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <memory>
#include <unistd.h>

namespace icfab {

constexpr const char *kBackend = "icfab";
constexpr uint64_t kDefaultWsBytes = 16ULL << 20;

/* A Work for an op that has already run: wait() returns or rethrows. */
class IcfabWork : public c10d::Work {
public:
	IcfabWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
		  int source = -1)
		: Work(rank, type), outputs_(std::move(outputs)), source_(source)
	{
		finish();
	}

	std::vector<at::Tensor> result() override { return outputs_; }

	/* The sender a receive from any source matched. */
	int sourceRank() const override
	{
		TORCH_CHECK(source_ >= 0, "icfab: sourceRank() of a Work that is"
			    " not a receive from any source");
		return source_;
	}

	c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
	{
		auto fut = c10::make_intrusive<c10::ivalue::Future>(
			c10::ListType::create(c10::TensorType::get()));
		fut->markCompleted(c10::IValue(outputs_));
		return fut;
	}

private:
	std::vector<at::Tensor> outputs_;
	int source_;
};

/*
 * A communicator and what its users share: the groups that run on it
 * hold it, the last one destroys it.
 */
struct Fabric {
	struct fdev_comm *comm = nullptr;
	/*
	 * Protects comm's use; one for the process's communicator and its
	 * sub-communicators, which share its context.
	 */
	std::shared_ptr<std::mutex> lock = std::make_shared<std::mutex>();
	/* A sub-communicator's: destroyed after it. */
	std::shared_ptr<Fabric> parent;

	~Fabric()
	{
		/* A sub-communicator's context goes on serving its parent. */
		std::unique_lock<std::mutex> g(*lock, std::defer_lock);

		if (parent)
			g.lock();
		fdev_comm_destroy(comm);
	}
};

static bool dtype_supported(at::ScalarType t)
{
	switch (t) {
	case at::kFloat: case at::kDouble: case at::kBFloat16: case at::kHalf:
	case at::kLong: case at::kInt: case at::kChar: case at::kByte:
		return true;
	default:
		return false;
	}
}

/* The library's own reduction types; others reduce locally after a gather. */
static bool native_sum(at::ScalarType t, enum fdev_dtype *dt)
{
	switch (t) {
	case at::kFloat: *dt = FDEV_F32; return true;
	case at::kBFloat16: *dt = FDEV_BF16; return true;
	case at::kHalf: *dt = FDEV_F16; return true;
	case at::kInt: *dt = FDEV_I32; return true;
	case at::kLong: *dt = FDEV_I64; return true;
	default: return false;
	}
}

static void check_tensor(const char *op, const at::Tensor &t)
{
	TORCH_CHECK(t.device().is_cpu(), "icfab ", op,
		    ": only CPU tensors are supported, got a tensor on ",
		    t.device());
	TORCH_CHECK(dtype_supported(t.scalar_type()), "icfab ", op,
		    ": unsupported dtype ", t.scalar_type(),
		    " (supported: float32, float64, bfloat16, float16, int64, int32,"
		    " int8, uint8)");
}

static void check_same(const char *op, const at::Tensor &a, const at::Tensor &b)
{
	check_tensor(op, a);
	check_tensor(op, b);
	TORCH_CHECK(a.scalar_type() == b.scalar_type(), "icfab ", op,
		    ": input dtype ", a.scalar_type(), " and output dtype ",
		    b.scalar_type(), " differ");
}

static void check_err(const char *op, int err)
{
	if (err >= 0)
		return;
	if (err == -EMSGSIZE)
		TORCH_CHECK(false, "icfab ", op,
			    ": the op does not fit the communicator's workspace"
			    " (raise ICFAB_TORCH_WS_BYTES)");
	if (err == -ETIMEDOUT)
		TORCH_CHECK(false, "icfab ", op,
			    ": Timed out waiting for the other ranks");
	TORCH_CHECK(false, "icfab ", op, ": ", std::strerror(-err), " (",
		    -err, ")");
}

static uint8_t *bytes(const at::Tensor &t)
{
	return static_cast<uint8_t *>(t.data_ptr());
}

/* A contiguous tensor to write into, and how to hand its bytes back. */
struct OutView {
	at::Tensor user, work;

	explicit OutView(at::Tensor &t)
		: user(t), work(t.is_contiguous() ? t : at::empty_like(
			t, at::MemoryFormat::Contiguous)) {}
	void commit()
	{
		if (!work.is_same(user))
			user.copy_(work);
	}
};

class ProcessGroupIcfab : public c10d::ProcessGroup {
public:
	/*
	 * @world_size: the default group's size, or -1 while the default
	 * group itself is made; a group of every rank shares the process's
	 * communicator when that one spans every rank too.
	 */
	ProcessGroupIcfab(const c10::intrusive_ptr<c10d::Store> &store,
			  int rank, int size, int64_t timeout_ms, int world_size)
		: ProcessGroup(rank, size), store_(store), timeout_(timeout_ms)
	{
		std::lock_guard<std::mutex> g(process_lock());
		std::shared_ptr<Fabric> f = process_fabric().lock();

		if (!f) {
			fab_ = open_comm(timeout_ms);
			process_fabric() = fab_;
		} else if (size == world_size && fdev_comm_size(f->comm) == size) {
			fab_ = f;
		} else if (world_size < 0) {
			why_ = "the communicator of an earlier default group is"
			       " still held (by a group or a tensor from"
			       " fabricdev.torch.empty())";
		} else {
			fab_ = open_sub(f);
		}
		if (!fab_)
			TORCH_WARN("icfab: a group of ", size, " ranks runs over the"
				   " c10d Store, not the fabric: ", why_);
	}

	const std::string getBackendName() const override { return kBackend; }

	uint64_t emulated_ps() const { return emulated_ps_; }
	uint64_t last_ps() const { return last_ps_; }

	/*
	 * @nbytes of this rank's device memory as a uint8 CPU tensor: a
	 * region of the communicator's context on the rank's endpoint,
	 * mapped and registered, freed when the tensor's storage dies (the
	 * storage holds the communicator until then). Without a fabric
	 * (a group over the Store) or where the communicator cannot
	 * register (rank 0's proxy): ordinary memory.
	 */
	at::Tensor empty_bytes(int64_t nbytes)
	{
		TORCH_CHECK(nbytes >= 0, "icfab empty: negative size");
		auto opts = at::TensorOptions().dtype(at::kByte);
		if (!fab_)
			return at::empty({nbytes}, opts);
		std::shared_ptr<Fabric> f = fab_;
		auto r = std::make_shared<struct fdev_region>();
		std::lock_guard<std::mutex> g(*f->lock);
		struct fdev *dev = fdev_comm_dev(f->comm);
		int err = -EOPNOTSUPP;

		if (dev) {
			err = fdev_region_alloc(dev, fdev_comm_endpoint(f->comm, rank_),
						nbytes ? nbytes : 1, r.get());
			if (err == -EOPNOTSUPP)
				return at::empty({nbytes}, opts);
			check_err("empty", err);
			err = fdev_comm_register(f->comm, r.get());
			if (err) {
				fdev_region_free(dev, r.get());
				if (err != -EOPNOTSUPP)
					check_err("empty", err);
			}
		}
		if (err == -EOPNOTSUPP)
			return at::empty({nbytes}, opts);
		return at::from_blob(r->addr, {nbytes}, [f, r](void *) {
			std::lock_guard<std::mutex> g(*f->lock);

			fdev_comm_deregister(f->comm, r.get());
			fdev_region_free(fdev_comm_dev(f->comm), r.get());
		}, opts);
	}

	/* Bytes of callers' tensors staged through the workspace, used in place. */
	std::pair<uint64_t, uint64_t> copy_stats()
	{
		uint64_t staged = 0, in_place = 0;

		if (fab_) {
			std::lock_guard<std::mutex> g(*fab_->lock);

			fdev_comm_bytes(fab_->comm, &staged, &in_place);
		}
		return {staged, in_place};
	}
	/* Does the group run on the fabric (else over the Store)? */
	bool on_fabric() const { return fab_ != nullptr; }
	/* Why it runs over the Store ("" when on the fabric). */
	std::string store_reason() const { return why_; }

	c10::intrusive_ptr<c10d::Work> broadcast(
		std::vector<at::Tensor> &tensors,
		const c10d::BroadcastOptions &opts) override
	{
		const char *op = "broadcast";

		TORCH_CHECK(tensors.size() == 1, "icfab ", op, ": one tensor per rank");
		check_tensor(op, tensors[0]);
		TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < size_, "icfab ",
			    op, ": root ", opts.rootRank, " out of range");
		auto g = guard();
		at::Tensor in = tensors[0].contiguous();
		OutView out(tensors[0]);

		if (fab_) {
			ran(op, fdev_broadcast(comm(op), bytes(in), bytes(out.work),
					       in.nbytes(), FDEV_U8, opts.rootRank,
					       FDEV_ALGO_AUTO));
		} else if (in.nbytes()) {
			at::Tensor all = gather_bytes(op, in);

			std::memcpy(bytes(out.work), bytes(all[opts.rootRank]),
				    in.nbytes());
		}
		out.commit();
		return done(c10d::OpType::BROADCAST, tensors);
	}

	c10::intrusive_ptr<c10d::Work> allreduce(
		std::vector<at::Tensor> &tensors,
		const c10d::AllreduceOptions &opts) override
	{
		TORCH_CHECK(tensors.size() == 1, "icfab all_reduce: one tensor per rank");
		check_tensor("all_reduce", tensors[0]);
		auto g = guard();
		at::Tensor in = tensors[0].contiguous();
		OutView out(tensors[0]);

		reduce_into("all_reduce", in, out.work, opts.reduceOp, false);
		out.commit();
		return done(c10d::OpType::ALLREDUCE, tensors);
	}

	/* One reduction over the tensors laid end to end. */
	c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
		std::vector<at::Tensor> &tensors,
		const c10d::AllreduceCoalescedOptions &opts) override
	{
		const char *op = "all_reduce_coalesced";

		TORCH_CHECK(!tensors.empty(), "icfab ", op, ": no tensors");
		for (auto &t : tensors)
			check_same(op, tensors[0], t);
		auto g = guard();
		std::vector<at::Tensor> flat;
		for (auto &t : tensors)
			flat.push_back(t.reshape({-1}));
		at::Tensor in = at::cat(flat);
		at::Tensor out = at::empty_like(in);

		reduce_into(op, in, out, opts.reduceOp, false);
		int64_t off = 0;
		for (auto &t : tensors) {
			t.copy_(out.narrow(0, off, t.numel()).view(t.sizes()));
			off += t.numel();
		}
		return done(c10d::OpType::ALLREDUCE_COALESCED, tensors);
	}

	/* One all-gather per input; outputs[r][i] gets rank r's inputs[i]. */
	c10::intrusive_ptr<c10d::Work> allgather_coalesced(
		std::vector<std::vector<at::Tensor>> &outputs,
		std::vector<at::Tensor> &inputs,
		const c10d::AllgatherOptions &) override
	{
		const char *op = "all_gather_coalesced";

		TORCH_CHECK(outputs.size() == (size_t)size_, "icfab ", op,
			    ": world_size output lists per rank");
		for (auto &list : outputs) {
			TORCH_CHECK(list.size() == inputs.size(), "icfab ", op,
				    ": every output list holds one tensor per input");
			for (size_t i = 0; i < inputs.size(); i++) {
				check_same(op, inputs[i], list[i]);
				TORCH_CHECK(list[i].numel() == inputs[i].numel(), "icfab ",
					    op, ": output and input sizes differ");
			}
		}
		auto g = guard();
		for (size_t i = 0; i < inputs.size(); i++) {
			at::Tensor in = inputs[i].contiguous();

			/* Nothing to move, and no dtype view of 0 bytes. */
			if (!in.nbytes())
				continue;
			at::Tensor all = gather_bytes(op, in);

			for (int r = 0; r < size_; r++)
				outputs[r][i].copy_(all[r].view(in.scalar_type())
						    .view(outputs[r][i].sizes()));
		}
		std::vector<at::Tensor> flat;
		for (auto &list : outputs)
			flat.insert(flat.end(), list.begin(), list.end());
		return done(c10d::OpType::ALLGATHER_COALESCED, flat);
	}

	c10::intrusive_ptr<c10d::Work> allgather(
		std::vector<std::vector<at::Tensor>> &outputs,
		std::vector<at::Tensor> &inputs,
		const c10d::AllgatherOptions &) override
	{
		const char *op = "all_gather";

		TORCH_CHECK(inputs.size() == 1 && outputs.size() == 1 &&
			    outputs[0].size() == (size_t)size_, "icfab ", op,
			    ": one input and world_size outputs per rank");
		for (auto &o : outputs[0]) {
			check_same(op, inputs[0], o);
			TORCH_CHECK(o.numel() == inputs[0].numel(), "icfab ", op,
				    ": output and input sizes differ");
		}
		auto g = guard();
		at::Tensor in = inputs[0].contiguous();

		if (!in.nbytes())
			return done(c10d::OpType::ALLGATHER, outputs[0]);
		at::Tensor all = gather_bytes(op, in);

		for (int r = 0; r < size_; r++)
			outputs[0][r].copy_(all[r].view(in.scalar_type())
					    .view(outputs[0][r].sizes()));
		return done(c10d::OpType::ALLGATHER, outputs[0]);
	}

	c10::intrusive_ptr<c10d::Work> _allgather_base(
		at::Tensor &output, at::Tensor &input,
		const c10d::AllgatherOptions &) override
	{
		const char *op = "_allgather_base";

		check_same(op, input, output);
		TORCH_CHECK(output.numel() == input.numel() * size_, "icfab ", op,
			    ": output must hold world_size times the input");
		auto g = guard();
		at::Tensor in = input.contiguous();
		OutView out(output);

		/* Straight into the output: in place where it is in a region. */
		if (in.nbytes() && fab_) {
			ran(op, fdev_all_gather(comm(op), bytes(in), bytes(out.work),
						in.nbytes(), FDEV_U8, FDEV_ALGO_AUTO));
		} else if (in.nbytes()) {
			at::Tensor all = gather_bytes(op, in);

			std::memcpy(bytes(out.work), bytes(all), all.nbytes());
		}
		out.commit();
		return done(c10d::OpType::_ALLGATHER_BASE, {output});
	}

	c10::intrusive_ptr<c10d::Work> reduce_scatter(
		std::vector<at::Tensor> &outputs,
		std::vector<std::vector<at::Tensor>> &inputs,
		const c10d::ReduceScatterOptions &opts) override
	{
		const char *op = "reduce_scatter";

		TORCH_CHECK(outputs.size() == 1 && inputs.size() == 1 &&
			    inputs[0].size() == (size_t)size_, "icfab ", op,
			    ": one output and world_size inputs per rank");
		for (auto &i : inputs[0]) {
			check_same(op, i, outputs[0]);
			TORCH_CHECK(i.numel() == outputs[0].numel(), "icfab ", op,
				    ": input and output sizes differ");
		}
		auto g = guard();
		std::vector<at::Tensor> flat;
		for (auto &i : inputs[0])
			flat.push_back(i.reshape({-1}));
		at::Tensor in = at::cat(flat);
		OutView out(outputs[0]);

		reduce_into(op, in, out.work, opts.reduceOp, true);
		out.commit();
		return done(c10d::OpType::REDUCE_SCATTER, outputs);
	}

	c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
		at::Tensor &output, at::Tensor &input,
		const c10d::ReduceScatterOptions &opts) override
	{
		const char *op = "_reduce_scatter_base";

		check_same(op, input, output);
		TORCH_CHECK(input.numel() == output.numel() * size_, "icfab ", op,
			    ": input must hold world_size times the output");
		auto g = guard();
		at::Tensor in = input.contiguous();
		OutView out(output);

		reduce_into(op, in, out.work, opts.reduceOp, true);
		out.commit();
		return done(c10d::OpType::_REDUCE_SCATTER_BASE, {output});
	}

	c10::intrusive_ptr<c10d::Work> alltoall_base(
		at::Tensor &output, at::Tensor &input,
		std::vector<int64_t> &out_splits, std::vector<int64_t> &in_splits,
		const c10d::AllToAllOptions &) override
	{
		const char *op = "all_to_all_single";

		check_same(op, input, output);
		auto g = guard();
		at::Tensor in = input.contiguous();
		OutView out(output);

		if (out_splits.empty() && in_splits.empty() && fab_) {
			TORCH_CHECK(in.numel() % size_ == 0 &&
				    out.work.numel() == in.numel(), "icfab ", op,
				    ": equal splits need input and output of the"
				    " same size, a multiple of world_size");
			ran(op, fdev_all_to_all(comm(op), bytes(in), bytes(out.work),
						in.nbytes() / size_, FDEV_U8,
						FDEV_ALGO_AUTO));
		} else {
			std::vector<uint64_t> sb, rb;
			std::string bad;

			bad += split_bytes(in, in_splits, "input", sb);
			bad += split_bytes(out.work, out_splits, "output", rb);
			exchange_v(op, bytes(in), sb, bytes(out.work), rb, bad);
		}
		out.commit();
		return done(c10d::OpType::ALLTOALL_BASE, {output});
	}

	c10::intrusive_ptr<c10d::Work> alltoall(
		std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
		const c10d::AllToAllOptions &) override
	{
		const char *op = "all_to_all";

		TORCH_CHECK(outputs.size() == (size_t)size_ &&
			    inputs.size() == (size_t)size_, "icfab ", op,
			    ": world_size inputs and outputs per rank");
		for (int r = 0; r < size_; r++)
			check_same(op, inputs[r], outputs[r]);
		auto g = guard();
		std::vector<uint64_t> sb, rb;
		std::vector<at::Tensor> flat;
		uint64_t rtotal = 0;

		for (int r = 0; r < size_; r++) {
			flat.push_back(inputs[r].reshape({-1}));
			sb.push_back(inputs[r].nbytes());
			rb.push_back(outputs[r].nbytes());
			rtotal += outputs[r].nbytes();
		}
		at::Tensor in = at::cat(flat);
		at::Tensor recv = at::empty({(int64_t)rtotal}, in.options().dtype(at::kByte));

		exchange_v(op, bytes(in), sb, bytes(recv), rb, "");
		uint64_t off = 0;
		for (int r = 0; r < size_; r++) {
			OutView out(outputs[r]);

			std::memcpy(bytes(out.work), bytes(recv) + off, rb[r]);
			out.commit();
			off += rb[r];
		}
		return done(c10d::OpType::ALLTOALL, outputs);
	}

	c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &) override
	{
		auto g = guard();
		uint8_t one = 1;
		std::vector<uint8_t> all(size_);

		/*
		 * Every group meets in the Store first, so a missing rank is
		 * this group's timeout (a group sharing the communicator
		 * would otherwise wait for the default group's).
		 */
		store_gather("barrier", &one, 1, all.data());
		if (fab_) {
			check_err("barrier", fdev_comm_barrier(comm()));
			check_alive("barrier");
		}
		return done(c10d::OpType::BARRIER, {});
	}

	/*
	 * A message is one Store key in the destination's mailbox for the
	 * tag, numbered by a Store counter: the sender's rank, then the bytes.
	 */
	c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors,
					    int dst, int tag) override
	{
		TORCH_CHECK(tensors.size() == 1, "icfab send: one tensor");
		check_tensor("send", tensors[0]);
		TORCH_CHECK(dst >= 0 && dst < size_ && dst != rank_,
			    "icfab send: bad destination rank ", dst);
		at::Tensor t = tensors[0].contiguous();
		std::vector<uint8_t> v(sizeof(int32_t) + t.nbytes());
		int32_t from = rank_;
		std::string box = mailbox(dst, tag);

		std::memcpy(v.data(), &from, sizeof(from));
		if (t.nbytes())
			std::memcpy(v.data() + sizeof(from), bytes(t), t.nbytes());
		int64_t n = store_->add(box, 1) - 1;
		store_->set(box + "/" + std::to_string(n), v);
		return done(c10d::OpType::SEND, tensors);
	}

	c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors,
					    int src, int tag) override
	{
		TORCH_CHECK(src >= 0 && src < size_ && src != rank_,
			    "icfab recv: bad source rank ", src);
		return receive(tensors, src, tag, c10d::OpType::RECV);
	}

	c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors,
						     int tag) override
	{
		return receive(tensors, -1, tag, c10d::OpType::RECVANYSOURCE);
	}

private:
	static std::mutex &process_lock()
	{
		static std::mutex m;

		return m;
	}

	/* The process's communicator, while a group holds it. */
	static std::weak_ptr<Fabric> &process_fabric()
	{
		static std::weak_ptr<Fabric> f;

		return f;
	}

	std::shared_ptr<Fabric> open_comm(int64_t timeout_ms)
	{
		std::vector<uint32_t> eps(4096);
		auto f = std::make_shared<Fabric>();
		int n = fdev_endpoints(nullptr, eps.data(), eps.size());

		TORCH_CHECK(n != -ENOENT, "icfab init_process_group: no icfab"
			    " device (is the icfab module loaded? FDEV_DEVICE"
			    " names another)");
		TORCH_CHECK(n >= 0, "icfab init_process_group: cannot read the"
			    " fabric's topology: ", std::strerror(-n),
			    " (is one committed? icfabd --apply --preset ...)");
		TORCH_CHECK(n > 0, "icfab init_process_group: the fabric has no"
			    " committed topology (icfabd --apply --preset ...)");
		TORCH_CHECK(n >= size_, "icfab init_process_group: the committed"
			    " topology has ", n, " endpoints, fewer than world_size ",
			    size_);
		std::string job = meet_job();

		if (timeout_ms > 0)
			setenv("FDEV_TIMEOUT_MS", std::to_string(timeout_ms).c_str(), 1);
		int err = fdev_comm_init(nullptr, job.c_str(), rank_, size_,
					 ws_bytes(), 0, &f->comm);
		const char *ep = getenv("FDEV_ENDPOINT");

		TORCH_CHECK(!(err == -EINVAL || err == -ENODEV ||
			      err == -EBUSY) || !ep || !*ep,
			    "icfab init_process_group: FDEV_ENDPOINT=", ep,
			    ": ", std::strerror(-err), " (it must name an"
			    " endpoint of the fabric that no other rank"
			    " drives; libfabricdev says why on stderr)");
		check_err("init_process_group", err);
		return f;
	}

	/*
	 * The job name of the group's communicator, made by its rank 0 and
	 * passed through the Store torch gave the group (its own prefix).
	 */
	std::string meet_job()
	{
		std::string job;

		if (rank_ == 0) {
			std::random_device rd;
			job = "torch-" + std::to_string(getpid()) + "-" +
			      std::to_string(rd());
			store_->set("icfab/job", std::vector<uint8_t>(job.begin(), job.end()));
		} else {
			std::vector<uint8_t> v = store_->get("icfab/job");
			job.assign(v.begin(), v.end());
		}
		return job;
	}

	/*
	 * A group of fewer ranks: a sub-communicator of the process's
	 * communicator @parent, each rank on the endpoint its process has
	 * there (the world's mapping), in the same context. Null (and
	 * why_) where @parent's context cannot host it.
	 */
	std::shared_ptr<Fabric> open_sub(const std::shared_ptr<Fabric> &parent)
	{
		auto f = std::make_shared<Fabric>();
		std::string job = meet_job();
		int err;

		{
			std::lock_guard<std::mutex> g(*parent->lock);

			err = fdev_comm_init_sub(parent->comm, job.c_str(), rank_,
						 size_, ws_bytes(), &f->comm);
		}
		if (err == -EOPNOTSUPP) {
			why_ = "the process's communicator uses rank 0's proxy"
			       " (FDEV_PROXY=1, or a module without"
			       " ICFAB_F_RECV_NOTIFY), whose context cannot be shared";
			return nullptr;
		}
		check_err("new_group", err);
		f->parent = parent;
		f->lock = parent->lock;
		return f;
	}

	struct fdev_comm *comm() const { return fab_->comm; }
	/* The communicator, its next call named @op in the trace. */
	struct fdev_comm *comm(const char *op) const
	{
		if (fdev_comm_set_label(fab_->comm, op))
			fdev_comm_set_label(fab_->comm, nullptr);
		return fab_->comm;
	}

	/* The communicator's lock, or the group's own over the Store. */
	std::unique_lock<std::mutex> guard()
	{
		return std::unique_lock<std::mutex>(fab_ ? *fab_->lock : store_lock_);
	}

	static uint64_t ws_bytes()
	{
		const char *e = getenv("ICFAB_TORCH_WS_BYTES");

		return e && *e ? std::strtoull(e, nullptr, 0) : kDefaultWsBytes;
	}

	void ran(const char *op, int err)
	{
		/*
		 * An op that failed where a rank was found dead failed
		 * because of it (say, its last WRITE landed after this rank
		 * had learned of its death from a peer): that is the error.
		 */
		if (err < 0)
			check_alive(op);
		check_err(op, err);
		check_alive(op);
		last_ps_ = fdev_comm_last_ps(comm());
		emulated_ps_ += last_ps_;
	}

	/*
	 * A rank whose process died is excluded by libfabricdev, and the
	 * collective completes without its bytes: for torch that is a wrong
	 * result, so this op and every later one on the group raise.
	 */
	void check_alive(const char *op)
	{
		for (int w = 0; w * 64 < size_; w++) {
			uint64_t f = fdev_comm_failed(comm(), w);

			if (f)
				TORCH_CHECK(false, "icfab ", op, ": rank ",
					    w * 64 + __builtin_ctzll(f),
					    " died (its process is gone); the"
					    " group cannot go on");
		}
	}

	c10::intrusive_ptr<c10d::Work> done(c10d::OpType type,
					    std::vector<at::Tensor> outputs,
					    int source = -1)
	{
		return c10::make_intrusive<IcfabWork>(rank_, type, std::move(outputs),
						      source);
	}

	/* @key from the Store, within the group's timeout. */
	std::vector<uint8_t> store_get(const char *op, const std::string &key, int from)
	{
		try {
			store_->wait({key}, timeout_);
		} catch (const std::exception &e) {
			TORCH_CHECK(false, "icfab ", op, ": Timed out after ",
				    timeout_.count(), " ms waiting for rank ", from,
				    " (", e.what(), ")");
		}
		return store_->get(key);
	}

	/* Every rank's @n bytes at @in, back to back at @out, over the Store. */
	void store_gather(const char *op, const uint8_t *in, uint64_t n, uint8_t *out)
	{
		std::string base = "icfab/ag/" + std::to_string(store_seq_++) + "/";

		store_->set(base + std::to_string(rank_),
			    std::vector<uint8_t>(in, in + n));
		for (int r = 0; r < size_; r++) {
			std::vector<uint8_t> v = store_get(op, base + std::to_string(r), r);

			TORCH_CHECK(v.size() == n, "icfab: rank ", r, " passed ",
				    v.size(), " bytes, rank ", rank_, " ", n);
			std::memcpy(out + r * n, v.data(), n);
		}
		/* The last rank to have read them all removes the keys. */
		if (store_->add(base + "n", 1) == size_) {
			for (int r = 0; r < size_; r++)
				store_->deleteKey(base + std::to_string(r));
			store_->deleteKey(base + "n");
		}
	}

	/* All-to-all-v over the Store: one key per (source, destination). */
	void store_exchange(const char *op, const uint8_t *send,
			    const std::vector<uint64_t> &sb, uint8_t *recv,
			    const std::vector<uint64_t> &rb)
	{
		std::string base = "icfab/a2a/" + std::to_string(store_seq_++) + "/";
		uint64_t off = 0;

		for (int p = 0; p < size_; p++) {
			store_->set(base + std::to_string(rank_) + "/" + std::to_string(p),
				    std::vector<uint8_t>(send + off, send + off + sb[p]));
			off += sb[p];
		}
		off = 0;
		for (int p = 0; p < size_; p++) {
			std::string key = base + std::to_string(p) + "/" +
					  std::to_string(rank_);
			std::vector<uint8_t> v = store_get(op, key, p);

			store_->deleteKey(key);
			std::memcpy(recv + off, v.data(), rb[p]);
			off += rb[p];
		}
	}

	/* Every rank's @n bytes at @in, back to back at @out. */
	void gather_raw(const char *op, const void *in, uint64_t n, void *out,
			enum fdev_algo algo)
	{
		if (fab_)
			ran(op, fdev_all_gather(comm(op), in, out, n, FDEV_U8, algo));
		else
			store_gather(op, static_cast<const uint8_t *>(in), n,
				     static_cast<uint8_t *>(out));
	}

	/* Every rank's copy of @in, as [world_size][nbytes] bytes. */
	at::Tensor gather_bytes(const char *op, const at::Tensor &in)
	{
		at::Tensor all = at::empty({(int64_t)size_, (int64_t)in.nbytes()},
					   in.options().dtype(at::kByte));

		if (!in.nbytes())
			return all;
		gather_raw(op, bytes(in), in.nbytes(), bytes(all), FDEV_ALGO_AUTO);
		return all;
	}

	/*
	 * @out = reduction of every rank's @in; with @scatter, this rank's
	 * block of it (in holds world_size blocks of out's size).
	 */
	void reduce_into(const char *op, const at::Tensor &in, at::Tensor &out,
			 const c10d::ReduceOp &rop, bool scatter)
	{
		auto t = in.scalar_type();
		enum fdev_dtype dt;
		bool avg = rop == c10d::ReduceOp::AVG;

		TORCH_CHECK(!avg || at::isFloatingType(t), "icfab ", op,
			    ": AVG of dtype ", t, " is not supported");
		if (!out.numel())
			return;
		if (fab_ && (rop == c10d::ReduceOp::SUM || avg) && native_sum(t, &dt)) {
			size_t count = out.numel();

			if (scatter)
				ran(op, fdev_reduce_scatter(comm(op), bytes(in),
					bytes(out), count, dt, FDEV_ALGO_AUTO));
			else
				ran(op, fdev_all_reduce(comm(op), bytes(in), bytes(out),
					count, dt, FDEV_ALGO_AUTO));
		} else {
			at::Tensor all = gather_bytes(op, in).view(t)
				.view({(int64_t)size_, in.numel()});
			at::Tensor red;

			switch (rop) {
			case c10d::ReduceOp::SUM:
			case c10d::ReduceOp::AVG:
				red = all.sum(0, false, t);
				break;
			case c10d::ReduceOp::PRODUCT:
				/* CPU prod has no 16-bit float kernels in 1.13. */
				red = t == at::kHalf || t == at::kBFloat16 ?
					all.to(at::kFloat).prod(0).to(t) :
					all.prod(0, false, t);
				break;
			case c10d::ReduceOp::MAX:
				red = std::get<0>(all.max(0));
				break;
			case c10d::ReduceOp::MIN:
				red = std::get<0>(all.min(0));
				break;
			default:
				TORCH_CHECK(false, "icfab ", op, ": reduce op ",
					    (int)rop.op_, " is not supported"
					    " (SUM, AVG, PRODUCT, MIN, MAX)");
			}
			if (scatter)
				red = red.narrow(0, (int64_t)rank_ * out.numel(),
						 out.numel());
			out.view({-1}).copy_(red);
		}
		if (avg)
			out.div_(size_);
	}

	/* Byte counts of @t split along dim 0; a message when they are wrong. */
	std::string split_bytes(const at::Tensor &t, const std::vector<int64_t> &splits,
				const char *what, std::vector<uint64_t> &out)
	{
		int64_t rows = t.dim() ? t.size(0) : 1;
		int64_t row = rows ? (int64_t)t.nbytes() / rows : 0, sum = 0;

		out.assign(size_, 0);
		if (splits.empty()) {
			if (rows % size_)
				return std::string("rank ") + std::to_string(rank_) +
				       ": " + what + " rows not a multiple of world_size; ";
			for (auto &b : out)
				b = (uint64_t)(rows / size_ * row);
			return "";
		}
		if (splits.size() != (size_t)size_)
			return std::string("rank ") + std::to_string(rank_) + ": " +
			       what + " split sizes must have world_size entries; ";
		for (int r = 0; r < size_; r++) {
			if (splits[r] < 0)
				return std::string("rank ") + std::to_string(rank_) +
				       ": negative " + what + " split; ";
			sum += splits[r];
			out[r] = (uint64_t)(splits[r] * row);
		}
		if (sum != rows)
			return std::string("rank ") + std::to_string(rank_) + ": " +
			       what + " split sizes add up to " + std::to_string(sum) +
			       ", the tensor has " + std::to_string(rows) + " rows; ";
		return "";
	}

	/*
	 * All-to-all-v of byte counts. Every rank's counts (and whether it
	 * found its own arguments wrong) go to every rank first, so a
	 * mismatch is the same error on every rank, not a hang or garbage.
	 */
	void exchange_v(const char *op, const uint8_t *send,
			const std::vector<uint64_t> &sb, uint8_t *recv,
			const std::vector<uint64_t> &rb, const std::string &bad)
	{
		const int n = size_;
		std::vector<uint64_t> mine(2 * n + 1), all((size_t)n * (2 * n + 1));
		std::string why;

		mine[0] = !bad.empty();
		std::copy(sb.begin(), sb.end(), mine.begin() + 1);
		std::copy(rb.begin(), rb.end(), mine.begin() + 1 + n);
		gather_raw(op, mine.data(), mine.size() * 8, all.data(), FDEV_ALGO_DIRECT);
		auto row = [&](int r) { return all.data() + (size_t)r * (2 * n + 1); };
		for (int r = 0; r < n && why.empty(); r++) {
			if (row(r)[0])
				why = "rank " + std::to_string(r) +
				      " passed inconsistent split sizes";
			for (int p = 0; p < n && why.empty(); p++) {
				if (row(r)[1 + p] != row(p)[1 + n + r])
					why = "rank " + std::to_string(r) + " sends " +
					      std::to_string(row(r)[1 + p]) +
					      " bytes to rank " + std::to_string(p) +
					      ", which expects " +
					      std::to_string(row(p)[1 + n + r]);
			}
		}
		TORCH_CHECK(why.empty(), "icfab ", op,
			    ": split sizes disagree between ranks: ", why,
			    bad.empty() ? "" : " (here: ", bad, bad.empty() ? "" : ")");

		/*
		 * The library reads and writes this rank's own totals (in
		 * place where the tensors are in a registered region); an
		 * empty tensor's null data is a byte of nothing.
		 */
		static uint8_t none;
		const uint8_t *s = send ? send : &none;
		uint8_t *q = recv ? recv : &none;
		std::vector<uint64_t> got(n);
		if (fab_)
			ran(op, fdev_all_to_all_v(comm(op), s, sb.data(), q, got.data(),
						  FDEV_U8, FDEV_ALGO_AUTO));
		else
			store_exchange(op, s, sb, q, rb);
	}

	std::string mailbox(int dst, int tag) const
	{
		return "icfab/p2p/" + std::to_string(dst) + "/" + std::to_string(tag);
	}

	/*
	 * The oldest message for this rank and @tag from @src (any when -1):
	 * messages from other sources read on the way wait in pending_.
	 */
	std::pair<int, std::vector<uint8_t>> take(int src, int tag)
	{
		auto &q = pending_[tag];

		for (auto it = q.begin(); it != q.end(); ++it) {
			if (src < 0 || it->first == src) {
				auto m = std::move(*it);

				q.erase(it);
				return m;
			}
		}
		for (;;) {
			std::string key = mailbox(rank_, tag) + "/" +
					  std::to_string(next_msg_[tag]++);
			std::vector<uint8_t> v = store_->get(key);
			int32_t from;

			store_->deleteKey(key);
			TORCH_CHECK(v.size() >= sizeof(from), "icfab recv: a"
				    " malformed message in the Store");
			std::memcpy(&from, v.data(), sizeof(from));
			v.erase(v.begin(), v.begin() + sizeof(from));
			if (src < 0 || from == src)
				return {from, std::move(v)};
			q.emplace_back(from, std::move(v));
		}
	}

	c10::intrusive_ptr<c10d::Work> receive(std::vector<at::Tensor> &tensors,
					       int src, int tag, c10d::OpType type)
	{
		TORCH_CHECK(tensors.size() == 1, "icfab recv: one tensor");
		check_tensor("recv", tensors[0]);
		std::lock_guard<std::mutex> g(p2p_lock_);
		auto m = take(src, tag);

		TORCH_CHECK(m.second.size() == tensors[0].nbytes(), "icfab recv: rank ",
			    m.first, " sent ", m.second.size(),
			    " bytes, the tensor holds ", tensors[0].nbytes());
		OutView out(tensors[0]);
		if (!m.second.empty())
			std::memcpy(bytes(out.work), m.second.data(), m.second.size());
		out.commit();
		return done(type, tensors, m.first);
	}

	c10::intrusive_ptr<c10d::Store> store_;
	std::shared_ptr<Fabric> fab_;	/* null: the group runs over the Store */
	std::string why_;		/* without fab_: why not on the fabric */
	std::chrono::milliseconds timeout_;	/* of the group's waits on the Store */
	std::mutex store_lock_;		/* without fab_: protects store_seq_ */
	uint64_t store_seq_ = 0;	/* the group's ops over the Store (barriers too) */
	/* under fab_->lock (or store_lock_): */
	uint64_t emulated_ps_ = 0;	/* ps, sum of this group's op times */
	uint64_t last_ps_ = 0;		/* ps, the group's last op */
	std::mutex p2p_lock_;		/* protects pending_, next_msg_ */
	std::map<int, std::deque<std::pair<int, std::vector<uint8_t>>>> pending_;
	std::map<int, uint64_t> next_msg_;	/* per tag: the next mailbox key */
};

} // namespace icfab

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
	py::object base = py::module::import("torch.distributed").attr("ProcessGroup");

	py::class_<icfab::ProcessGroupIcfab,
		   c10::intrusive_ptr<icfab::ProcessGroupIcfab>>(m, "ProcessGroupIcfab", base)
		.def(py::init<const c10::intrusive_ptr<c10d::Store> &, int, int, int64_t,
			      int>(),
		     py::arg("store"), py::arg("rank"), py::arg("size"),
		     py::arg("timeout_ms"), py::arg("world_size") = -1,
		     py::call_guard<py::gil_scoped_release>())
		.def("emulated_ps", &icfab::ProcessGroupIcfab::emulated_ps)
		.def("last_ps", &icfab::ProcessGroupIcfab::last_ps)
		.def("empty_bytes", &icfab::ProcessGroupIcfab::empty_bytes,
		     py::call_guard<py::gil_scoped_release>())
		.def("copy_stats", &icfab::ProcessGroupIcfab::copy_stats)
		.def("on_fabric", &icfab::ProcessGroupIcfab::on_fabric)
		.def("store_reason", &icfab::ProcessGroupIcfab::store_reason);
}
