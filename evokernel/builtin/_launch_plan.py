"""Launch plans: a generated forward's kernel launches, recorded once and launched again directly.

This file is the candidate's own code: the generator copies it, from the line below the marker
on, into every builtin candidate (it is also imported by the tests). A deep network's forward is
launch-bound: on the H200, 110-350 us of Python a stage against a few us of GPU time (Triton's
JIT entry binds and checks every argument, each launcher works out shapes, strides and grids,
forward makes views). Inductor's generated wrapper avoids it by calling each kernel's launcher
with precomputed arguments; a launch plan does the same for our forward:

- the first call with a given input layout runs forward as written (autotuning happens here);
- the second records it: every Triton launch (compiled kernel, grid, arguments in declaration
  order) and every stage torch runs for us (`@_host_step`: the library's convolution or matmul
  under the kernelbench rules, a cat, a fill), with each tensor argument located in an input, a
  parameter or buffer, or memory forward allocated;
- the plan is then checked: replayed once on the same inputs with its fresh memory filled with
  NaN bytes, its outputs must match the recorded call's (anything forward did that the plan does
  not hold, such as a torch op on a buffer, shows up there) or it is dropped;
- later calls with the same layout launch the same kernels on the new inputs' addresses, in the
  same order, on the current stream: nothing is cached but the launch arguments, every kernel
  runs on every call.

A plan is tied to the parameters' and buffers' storage: one moved or replaced is seen on the
next call, which records again. Memory forward allocated is laid out in one block per call
(reused between tensors whose uses do not overlap, as the allocator would), the outputs in their
own allocations.
"""
# --- candidate code below (copied into generated candidates) ---
import torch
import triton
import triton.language as tl

_RECORDING = []  # the recording in progress (a stack): launches and host steps report to it
_PLAN_ALIGN = 512  # the caching allocator's alignment: kernels were specialised on it


def _launch(kernel, grid, *args, **kwargs):
    """`kernel[grid](*args, **kwargs)`, noted by the recording in progress."""
    compiled = kernel[grid](*args, **kwargs)
    if _RECORDING:
        _RECORDING[-1].kernel(kernel, grid, compiled, args, kwargs)
    return compiled


def _host_call(fn, *args):
    """``fn(*args)``, work torch does for us (no Triton kernel of ours), recorded as a call."""
    out = fn(*args)
    if _RECORDING:
        _RECORDING[-1].host(fn, args, out)
    return out


def _unplannable(why):
    """Forward does something no replay may repeat as recorded (a random draw's seed)."""
    if _RECORDING:
        _RECORDING[-1].fail(why)


def _host_step(fn):
    """A launcher whose stage torch runs (the library's convolution or matmul, a cat)."""
    def step(*args):
        return _host_call(fn, *args)

    step.__name__ = fn.__name__
    return step


def _host_draw(fn):
    """A host step that draws from torch's generator: a replay draws anew, as forward would;
    the recording's check replay takes forward's draws instead, so that the call which records
    draws once, as the reference's call does, and the check compares like with like."""
    fn._draws = True
    return _host_step(fn)


@_host_step
def _zero_(t):
    return t.zero_()


@_host_step
def _copy_(dst, src):
    return dst.copy_(src)


@_host_step
def _contiguous(t):
    return t.contiguous()


# forward's own reshapes (the view chains between stages): a reshape or flatten that copies is a
# stage like any other, so a replay makes the copy again (a view costs a call and binds nothing)
@_host_step
def _reshape(t, *shape):
    return t.reshape(*shape)


@_host_step
def _flatten(t, *dims):
    return t.flatten(*dims)


@_host_step
def _reshape_as(t, other):
    return t.reshape_as(other)


# tensors forward makes from nothing (a constant pad's fill): made again on every replay
@_host_step
def _full(shape, value, dtype, device):
    return torch.full(shape, value, dtype=dtype, device=device)


@_host_step
def _zeros(shape, dtype, device):
    return torch.zeros(shape, dtype=dtype, device=device)


@_host_step
def _ones(shape, dtype, device):
    return torch.ones(shape, dtype=dtype, device=device)


@_host_step
def _zeros_like(t):
    return torch.zeros_like(t)


class _At:
    """A host step's tensor argument: where it lives (see _PlanRecording.locate)."""
    __slots__ = ("where",)

    def __init__(self, where):
        self.where = where


@triton.jit
def _plan_mismatch_kernel(a_ptr, b_ptr, count_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0).to(tl.float32)
    ok = tl.abs(a - b) <= 1e-6 + 1e-5 * tl.abs(a)  # NaN on either side is a mismatch
    bad = tl.where(mask & (ok == 0), 1, 0)
    tl.atomic_add(count_ptr, tl.sum(bad, axis=0))


def _plan_outputs_match(first, second):
    """Whether two lists of output tensors hold the same values (within float rounding)."""
    if len(first) != len(second):
        return False
    for a, b in zip(first, second):
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return False
        n = a.numel()
        if n == 0:
            continue
        count = torch.zeros((1,), dtype=torch.int32, device=a.device)
        _plan_mismatch_kernel[(triton.cdiv(n, 1024),)](a.reshape(-1), b.reshape(-1), count, n, BLOCK=1024)
        if int(count.item()) != 0:
            return False
    return True


def _plan_flatten(value, out):
    """Output tensors in order, and the structure to rebuild (tensor, tuple or list of them)."""
    if isinstance(value, torch.Tensor):
        out.append(value)
        return "t"
    if isinstance(value, (tuple, list)):
        items = tuple(_plan_flatten(v, out) for v in value)
        return None if None in items else (type(value), items)
    return None


def _plan_rebuild(shape, tensors, pos):
    if shape == "t":
        pos[0] += 1
        return tensors[pos[0] - 1]
    kind, items = shape
    return kind(_plan_rebuild(item, tensors, pos) for item in items)


def _plan_key(module, args):
    """The layout a plan is valid for: each tensor's shape, strides, dtype, device, offset and
    address alignment (Triton specialises on 16-byte alignment), other arguments by value."""
    key = [module.training]
    for a in args:
        if isinstance(a, torch.Tensor):
            key.append((a.shape, a.stride(), a.dtype, a.device, a.storage_offset(), a.data_ptr() % 16))
        elif a is None or isinstance(a, (int, float, bool, str)):
            key.append(a)
        else:
            return None
    return tuple(key)


def _storage_base(t):
    return t.data_ptr() - t.storage_offset() * t.element_size()


def _typed(raw, dtype):
    """``raw`` (uint8 from a storage's or block's start) viewed as ``dtype``."""
    usable = raw.numel() - raw.numel() % dtype.itemsize
    return raw[:usable].view(dtype)


class _PlanRecording:
    """What one call of forward launched, with every tensor located."""

    def __init__(self, module, args):
        self.steps = []
        self.drawn = {}  # step -> what a host draw (_host_draw) returned in forward
        self.keep = []  # forward's own tensors, alive until the end: no address is reused meanwhile
        self.why = None
        self.slots = {}  # storage address -> slot number
        self.slot_info = []  # per slot: [kind, where, nbytes, first step, last step, host step or None]
        self.statics = {}  # storage address -> (holder dict, name) of a parameter or buffer
        for _, sub in module.named_modules():
            for holder in (sub._parameters, sub._buffers):
                for name, t in holder.items():
                    if t is not None and t.device.type != "meta":
                        self.statics[t.untyped_storage().data_ptr()] = (holder, name, t)
        self.static_checks = []
        self.inputs = {}
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                base = a.untyped_storage().data_ptr()
                if base in self.inputs:
                    self.why = "two inputs share storage"
                self.inputs[base] = i

    def fail(self, why):
        if self.why is None:
            self.why = why

    def locate(self, t):
        """(slot, byte offset from its storage's start, size, stride, dtype) of a tensor argument."""
        storage = t.untyped_storage()
        base = storage.data_ptr()
        slot = self.slots.get(base)
        step = len(self.steps)
        if slot is None:
            slot = len(self.slot_info)
            self.slots[base] = slot
            if base in self.inputs:
                self.slot_info.append(["input", self.inputs[base], storage.nbytes(), step, step, None])
            elif base in self.statics:
                holder, name, tensor = self.statics[base]
                self.static_checks.append((holder, name, tensor.data_ptr()))
                self.slot_info.append(["static", base, storage.nbytes(), step, step, None])
            else:
                self.keep.append(t)
                self.slot_info.append(["temp", base, storage.nbytes(), step, step, None])
        self.slot_info[slot][4] = step
        return (slot, t.data_ptr() - base, tuple(t.shape), tuple(t.stride()), t.dtype)

    def kernel(self, kernel, grid, compiled, args, kwargs):
        if self.why is not None:
            return
        jit, config = kernel, {}
        while hasattr(jit, "configs") or hasattr(jit, "values"):  # an autotuner or heuristics over the kernel
            if hasattr(jit, "values") or getattr(jit, "reset_to_zero", None) or getattr(jit, "restore_value", None) \
                    or getattr(jit, "best_config", None) is None:
                return self.fail("a heuristic, a reset hook or an untuned autotuner decides part of a launch")
            config.update(jit.best_config.all_kwargs())
            jit = jit.fn
        names = getattr(jit, "arg_names", None)
        if names is None or getattr(jit, "fn", None) is None:
            return self.fail("a launch of something other than a Triton kernel")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        bound.update({k: v for k, v in config.items() if k in names})
        defaults = jit.fn.__defaults__ or ()
        for name, value in zip(names[len(names) - len(defaults):], defaults):
            bound.setdefault(name, value)
        if any(n not in bound for n in names):
            return self.fail("a launch left an argument unbound")
        if callable(grid):
            grid = grid(bound)
        grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        ordered = [bound[n] for n in names]
        templates = [self.locate(a) if isinstance(a, torch.Tensor) else a for a in ordered]
        runner = None if compiled is None else compiled[grid]
        self.steps.append(("kernel", jit, grid, runner, templates))

    def template(self, value):
        """A host step's argument with every tensor in it (lists and tuples too) located."""
        if isinstance(value, torch.Tensor):
            return _At(self.locate(value))
        if isinstance(value, (list, tuple)):
            return type(value)(self.template(v) for v in value)
        return value

    def host(self, fn, args, out):
        if self.why is not None:
            return
        templates = [self.template(a) for a in args]
        result = None
        if isinstance(out, torch.Tensor):
            storage = out.untyped_storage().data_ptr()
            made = not (storage in self.slots or storage in self.inputs or storage in self.statics)
            result = self.locate(out)  # made here, or in place (a fill): then nothing new to bind
            if made:
                self.slot_info[result[0]][5] = len(self.steps)  # this step's result gives the slot its memory
                result = ("new",) + result
        elif out is not None:
            return self.fail("a host step returned something other than a tensor")
        if getattr(fn, "_draws", False):
            self.drawn[len(self.steps)] = out
        self.steps.append(("host", fn, templates, result))

    def finish(self, out):
        if self.why is not None:
            return None
        tensors = []
        structure = _plan_flatten(out, tensors)
        if structure is None:
            self.fail("forward returned something other than tensors")
            return None
        outs = []
        end = len(self.steps)
        for t in tensors:
            loc = self.locate(t)
            info = self.slot_info[loc[0]]
            if info[0] == "static":
                self.fail("forward returns a parameter or a view of one")
                return None
            if info[0] == "temp":
                info[0] = "output"
            info[4] = end
            outs.append(loc)
        return _LaunchPlan(self, structure, outs)


class _LaunchPlan:
    """A recorded forward, launched again on new inputs of the same layout."""

    def __init__(self, rec, structure, outs):
        self.structure = structure
        self.outs = outs
        self.static_checks = rec.static_checks
        self.n_slots = len(rec.slot_info)
        self.input_slots = [(slot, info[1]) for slot, info in enumerate(rec.slot_info) if info[0] == "input"]
        self.static_bases = {slot: info[1] for slot, info in enumerate(rec.slot_info) if info[0] == "static"}
        self.static_tensors = {base: rec.statics[base][2] for base in self.static_bases.values()}
        self.output_slots = [(slot, info[2]) for slot, info in enumerate(rec.slot_info)
                             if info[0] == "output" and info[5] is None]
        self.device = rec.keep[0].device if rec.keep else None
        self.drawn = dict(rec.drawn)  # for the check replay alone (see _host_draw); cleared after it
        # forward's own memory (not made by a host step, not returned): one block, reused
        # between tensors whose uses do not overlap
        temps = [(slot, info) for slot, info in enumerate(rec.slot_info) if info[0] == "temp" and info[5] is None]
        placed = []  # (offset, end, first, last)
        self.arena_offsets = {}
        for slot, info in sorted(temps, key=lambda item: -item[1][2]):
            size = -(-info[2] // _PLAN_ALIGN) * _PLAN_ALIGN
            offset = 0
            for start, stop, first, last in sorted(p for p in placed if not (p[3] < info[3] or info[4] < p[2])):
                if offset + size <= start:
                    break
                offset = max(offset, stop)
            placed.append((offset, offset + size, info[3], info[4]))
            self.arena_offsets[slot] = offset
        self.arena_bytes = max((p[1] for p in placed), default=0)
        self.steps = []
        for step in rec.steps:
            if step[0] == "kernel":
                _, jit, grid, runner, templates = step
                consts = [None if isinstance(t, tuple) else t for t in templates]
                fixups = [(i, t) for i, t in enumerate(templates) if isinstance(t, tuple)]
                self.steps.append((0 if runner is not None else 1, jit, grid, runner, consts, fixups))
            else:
                _, fn, templates, result = step
                self.steps.append((2, fn, templates, result))

    def stale(self):
        for holder, name, ptr in self.static_checks:
            t = holder.get(name)
            if t is None or t.data_ptr() != ptr:
                return True
        return False

    def run(self, args, poison=False):
        bases = [None] * self.n_slots  # each slot's address
        typed = [None] * self.n_slots  # an input or a host step's result, as forward saw it
        raw = [None] * self.n_slots  # (uint8 block holding the slot's memory, the slot's byte offset in it)
        for slot, i in self.input_slots:
            bases[slot] = _storage_base(args[i])
            typed[slot] = args[i]
        for slot, base in self.static_bases.items():
            bases[slot] = base
            typed[slot] = self.static_tensors[base]
        device = self.device
        if device is None:
            device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        # the launchers' stream, looked up once a call rather than by every launcher
        stream = torch.cuda.current_stream(device).cuda_stream if device is not None and device.type == "cuda" else None
        views = {}  # (id of a block, dtype) -> the block viewed as dtype, made once a call
        if self.arena_bytes:
            arena = torch.empty((self.arena_bytes,), dtype=torch.uint8, device=device)
            if poison:
                arena.fill_(255)  # NaN in every float type: whatever the plan does not write shows
            start = arena.data_ptr()
            for slot, offset in self.arena_offsets.items():
                bases[slot] = start + offset
                raw[slot] = (arena, offset)
        for slot, nbytes in self.output_slots:
            block = torch.empty((-(-nbytes // _PLAN_ALIGN) * _PLAN_ALIGN,), dtype=torch.uint8, device=device)
            if poison:
                block.fill_(255)
            bases[slot] = block.data_ptr()
            raw[slot] = (block, 0)
        for index, step in enumerate(self.steps):
            kind = step[0]
            if kind == 0:  # a compiled kernel: its own launcher, addresses as integers
                _, _, _, runner, consts, fixups = step
                launch_args = list(consts)
                for i, (slot, offset, _, _, _) in fixups:
                    launch_args[i] = bases[slot] + offset
                runner(*launch_args, stream=stream)
            elif kind == 1:  # no compiled kernel (the CPU interpreter): through its entry, with tensors
                _, jit, grid, _, consts, fixups = step
                launch_args = list(consts)
                for i, template in fixups:
                    launch_args[i] = _plan_tensor(template, bases, typed, raw, views)
                jit[grid](*launch_args)
            else:
                _, fn, templates, result = step
                drawn = self.drawn.get(index) if poison else None
                out = drawn.clone() if drawn is not None else fn(*[_plan_value(t, bases, typed, raw, views)
                                                                   for t in templates])
                if result is not None and result[0] == "new":
                    _, slot, offset, size, stride, dtype = result
                    base = out.untyped_storage().data_ptr()
                    if tuple(out.shape) != size or tuple(out.stride()) != stride or out.data_ptr() - base != offset:
                        return None  # a host step's result changed layout: the plan no longer holds
                    bases[slot] = base
                    typed[slot] = out
        return _plan_rebuild(self.structure, [_plan_tensor(t, bases, typed, raw, views) for t in self.outs], [0])


def _plan_value(template, bases, typed, raw, views):
    """A host step's argument on this call: its tensors located anew."""
    if isinstance(template, _At):
        return _plan_tensor(template.where, bases, typed, raw, views)
    if isinstance(template, (list, tuple)):
        return type(template)(_plan_value(t, bases, typed, raw, views) for t in template)
    return template


def _plan_tensor(template, bases, typed, raw, views):
    """The tensor a template locates, as a view of what the slot holds on this call: ``raw[slot]``
    is (uint8 block, the slot's byte offset in it); ``views`` keeps each block's typed view."""
    slot, offset, size, stride, dtype = template
    t = typed[slot]
    if t is not None and t.dtype == dtype and t.data_ptr() - bases[slot] == offset \
            and tuple(t.shape) == size and tuple(t.stride()) == stride:
        return t
    if raw[slot] is None:
        raw[slot] = (torch.empty((0,), dtype=torch.uint8, device=t.device).set_(t.untyped_storage()), 0)
    block, shift = raw[slot]
    key = (id(block), dtype)
    whole = views.get(key)
    if whole is None:
        whole = views[key] = _typed(block, dtype)
    # as_strided counts from the storage's start; every block starts at its storage's start
    return torch.as_strided(whole, size, stride, (shift + offset) // dtype.itemsize)


class _LaunchPlans:
    """A module's plans, one per input layout, and how each came to be (or not)."""

    RECORD_AT = 2  # the first call runs as written (compiling, autotuning); the second records
    TRIES = 3  # recordings that fail to check before the layout runs as written for good

    def __init__(self):
        self.plans = {}  # key -> plan
        self.calls = {}  # key -> calls run as written
        self.failed = {}  # key -> failed recordings
        self.why = {}  # key -> why the last recording made no plan
        self.replays = 0

    def run(self, module, forward, args):
        key = _plan_key(module, args)
        if key is None:
            return forward(*args)
        plan = self.plans.get(key)
        if plan is not None:
            out = None if plan.stale() else plan.run(args)
            if out is not None:
                self.replays += 1
                return out
            del self.plans[key]  # a parameter moved, or a host step's result changed layout: record again
        calls = self.calls.get(key, 0) + 1
        self.calls[key] = calls
        if calls < self.RECORD_AT or self.failed.get(key, 0) >= self.TRIES:
            return forward(*args)
        recording = _PlanRecording(module, args)
        # one recording at a time: one left by a forward that raised is dropped here
        _RECORDING[:] = [recording]
        out = forward(*args)
        _RECORDING.clear()
        plan = recording.finish(out)
        if plan is not None:
            replayed = plan.run(args, poison=True)  # forward's own draws, not new ones (see _host_draw)
            plan.drawn.clear()
            expected, got = [], []
            _plan_flatten(out, expected)
            if replayed is not None:
                _plan_flatten(replayed, got)
            if replayed is not None and _plan_outputs_match(expected, got):
                self.plans[key] = plan
                return out
            recording.fail("the replayed outputs differ from forward's")
        self.why[key] = recording.why
        self.failed[key] = self.failed.get(key, 0) + 1
        return out


def _launch_plans(module):
    plans = getattr(module, "_evokernel_launch_plans", None)
    if plans is None:
        plans = _LaunchPlans()
        module._evokernel_launch_plans = plans
    return plans
