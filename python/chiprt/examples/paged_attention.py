"""paged_attention: attention over a paged KV cache; per KV block QK (AIC), softmax (AIV),
PV (AIC) and an online update (AIV) in nested scopes, the blocks reached through a block table.

Port of examples/paged_attention/host/paged_attention.cpp; argument layout and func ids in
examples/paged_attention/protocol.h. Stateless (the output is written, never read).
"""

import numpy as np

import chiprt

from ._support import Example, ExampleCase, PreparedRun, chip_object_path

# examples/paged_attention/protocol.h
QK = 0
SOFTMAX = 1
PV = 2
ONLINE_UPDATE = 3
NORMALIZE = 4
AUTO_SCOPES = 0
MANUAL_SCOPES = 1
TASKS_PER_BLOCK = 4  # QK, softmax, PV, online update
TASKS_PER_HEAD = 1  # the normalisation

SEED = 2024

# Case parameter -> CallConfig.rings field (0 in the case: the caller's config, the
# CHIPRT_RING_* variables or the defaults decide).
RING_PARAMS = (("ring_window", "task_window"), ("ring_heap", "heap_bytes"),
               ("ring_dep_pool", "dep_pool"))


def build_callable():
    # One object holds the five kernels, each under its own symbol; the callable stores it once.
    kernels = chip_object_path("paged_attention_kernels")
    return (chiprt.CallableBuilder()
            .orchestration_object(chip_object_path("paged_attention_orchestration"),
                                  chiprt.signature(["in", "in", "in", "in", "in",
                                                    "output_existing"], scalars=2))
            .kernel_object(QK, "aic", kernels, chiprt.signature(["in", "in", "out"], scalars=4),
                           symbol="paged_attention_qk", name="qk")
            .kernel_object(SOFTMAX, "aiv", kernels,
                           chiprt.signature(["in", "out", "out", "out"], scalars=2),
                           symbol="paged_attention_softmax", name="softmax")
            .kernel_object(PV, "aic", kernels, chiprt.signature(["in", "in", "out"], scalars=3),
                           symbol="paged_attention_pv", name="pv")
            .kernel_object(ONLINE_UPDATE, "aiv", kernels,
                           chiprt.signature(["in", "in", "in", "inout", "inout", "inout"],
                                            scalars=3),
                           symbol="paged_attention_online_update", name="online_update")
            .kernel_object(NORMALIZE, "aiv", kernels,
                           chiprt.signature(["in", "in", "output_existing"], scalars=2),
                           symbol="paged_attention_normalize", name="normalize")
            .build())


def sequence_lengths(batch: int, block_size: int, max_seq_len: int) -> np.ndarray:
    """Ragged lengths: sequence b is shorter than the longest by a stride that is not a multiple
    of the block size, so last blocks are partly used; every sequence keeps at least one key."""
    lens = [max(1, max_seq_len - (b * (block_size + 3)) % max_seq_len) for b in range(batch)]
    return np.array(lens, dtype=np.int32)


def reference_attention(q, key_cache, value_cache, table, lens, block_size, scale):
    """softmax(q k^T * scale) v per (b, h) in float64, reading the caches through the table."""
    batch, heads, q_rows, head_dim = q.shape
    out = np.zeros(q.shape, dtype=np.float64)
    for b in range(batch):
        length = int(lens[b])
        blocks = table[b, :(length + block_size - 1) // block_size]
        for h in range(heads):
            keys = key_cache[blocks, h].reshape(-1, head_dim)[:length].astype(np.float64)
            values = value_cache[blocks, h].reshape(-1, head_dim)[:length].astype(np.float64)
            scores = (q[b, h].astype(np.float64) @ keys.T) * scale
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            out[b, h] = weights @ values
    return out


def apply_case_rings(prepared: PreparedRun, case: ExampleCase) -> None:
    """The case's ring sizes (tiny rings exercise back-pressure) apply unless the caller chose
    its own (``rings=`` with that field), as the case's CallConfig.rings does in C++."""
    wanted = {field: case.param(param) for param, field in RING_PARAMS if case.param(param)}
    if not wanted:
        return
    rings = dict(prepared.config.get("rings") or {})
    for field, value in wanted.items():
        if rings.get(field) in (None, [], ()):
            rings[field] = [value]
    prepared.config["rings"] = rings


def case_params(batch, heads, q_rows, head_dim, block_size, max_seq_len, manual=False,
                tiny_rings=False):
    return (("batch", batch), ("heads", heads), ("q_rows", q_rows), ("head_dim", head_dim),
            ("block_size", block_size), ("max_seq_len", max_seq_len),
            ("manual", 1 if manual else 0),
            # 0 = the caller's config, else the environment or the defaults.
            ("ring_window", 64 if tiny_rings else 0),
            ("ring_heap", 8192 if tiny_rings else 0),
            ("ring_dep_pool", 64 if tiny_rings else 0))


class PagedAttention(Example):
    name = "paged_attention"
    description = ("attention over a paged KV cache: per block QK (AIC), softmax (AIV), PV (AIC), "
                   "online update (AIV) in nested scopes, non-contiguous blocks via a block table")
    cases = (
        ExampleCase("small", case_params(2, 2, 2, 16, 8, 37)),
        ExampleCase("medium", case_params(4, 4, 4, 32, 16, 100)),
        ExampleCase("large", case_params(8, 8, 4, 64, 16, 300), large=True),
        # `chiprt bench`'s paged_attention row: kernels dominate the per-task cost.
        ExampleCase("bench", case_params(4, 4, 32, 128, 128, 1024), large=True),
        # Window 64, 8 KiB heaps and 64 dependency entries per depth (tensormap_ringbuffer;
        # host_build_graph has no rings): the orchestrator finishes only by waiting for
        # retirement and reusing slots and heap many times.
        ExampleCase("tiny_rings", case_params(3, 2, 4, 32, 16, 150, False, True)),
        # Manual scopes: no tensor-map tracking, only explicit TaskArgs.after dependencies.
        ExampleCase("manual", case_params(3, 2, 4, 32, 16, 70, True)),
        ExampleCase("manual_tiny_rings", case_params(3, 2, 4, 32, 16, 150, True, True)),
    )

    def _prepare(self, prepared: PreparedRun, case: ExampleCase) -> None:
        batch, heads = case.param("batch"), case.param("heads")
        q_rows, head_dim = case.param("q_rows"), case.param("head_dim")
        block_size, max_seq_len = case.param("block_size"), case.param("max_seq_len")
        max_blocks = (max_seq_len + block_size - 1) // block_size
        scope_mode = MANUAL_SCOPES if case.param("manual") else AUTO_SCOPES
        lens = sequence_lengths(batch, block_size, max_seq_len)
        blocks_per_seq = (lens.astype(np.int64) + block_size - 1) // block_size

        # Physical blocks: every sequence's blocks, shuffled, plus spares nobody uses, so
        # logical neighbours are rarely physical neighbours.
        num_blocks = int(blocks_per_seq.sum()) + batch
        rng = np.random.default_rng(SEED)
        physical = rng.permutation(num_blocks).astype(np.int32)
        # Unused entries point at a block that exists, so a wrong length would read real data
        # and be caught by the comparison rather than fault.
        table = np.full((batch, max_blocks), physical[-1], dtype=np.int32)
        next_block = 0
        for b in range(batch):
            count = int(blocks_per_seq[b])
            table[b, :count] = physical[next_block:next_block + count]
            next_block += count

        q = rng.uniform(-1.0, 1.0, (batch, heads, q_rows, head_dim)).astype(np.float32)
        cache_shape = (num_blocks, heads, block_size, head_dim)
        key_cache = rng.uniform(-1.0, 1.0, cache_shape).astype(np.float32)
        value_cache = rng.uniform(-1.0, 1.0, cache_shape).astype(np.float32)
        scale = np.float32(1.0) / np.sqrt(np.float32(head_dim))
        want = reference_attention(q, key_cache, value_cache, table, lens, block_size,
                                   float(scale))
        # Outputs are convex combinations of values in [-1, 1], so errors stay near float
        # epsilon; the bound grows with the dot-product length and the keys averaged.
        tolerance = 1e-8 * (head_dim + max_seq_len) + 1e-6

        tensor_q = prepared.upload(q)
        tensor_k = prepared.upload(key_cache)
        tensor_v = prepared.upload(value_cache)
        tensor_table = prepared.upload(table)
        tensor_lens = prepared.upload(lens)
        # NaN bit patterns: an output no task wrote fails the comparison.
        tensor_out = prepared.filled(q.shape, np.float32, 0xFF)

        apply_case_rings(prepared, case)
        prepared.register(build_callable())
        prepared.args = (chiprt.TaskArgs().input(tensor_q).input(tensor_k).input(tensor_v)
                         .input(tensor_table).input(tensor_lens).output_existing(tensor_out)
                         .scalar(float(scale), dtype="f32").scalar(scope_mode))
        prepared.kernel_tasks = int(heads * (blocks_per_seq * TASKS_PER_BLOCK
                                             + TASKS_PER_HEAD).sum())
        prepared.tolerance = tolerance

        prepared.check_output(tensor_out, want, head_dim)
