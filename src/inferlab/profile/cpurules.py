"""CPU operator name → category: the built-in rules of CPU mode (a table, like the GPU one).

CPU engines (vLLM's CPU build, torch on CPU) record ``cpu_op`` events named ``aten::*``,
``_C::*`` (vLLM's CPU kernels: oneDNN matmul, attention, rotary, sampling) or ``vllm::*``
(custom ops wrapping them), and IPEX/oneDNN ops. The first matching rule wins (``re.search``,
case-insensitive); user rules (``--categories``) are tried first. An op takes the category of its
outermost enclosing op that has one (``aten::empty`` inside attention is attention); an op no
rule matches, outside any categorized op, is ``other`` and listed by name.

``aten::pow``, ``aten::mean`` and ``aten::rsqrt`` are the native RMSNorm decomposition that
vLLM's CPU path runs (no fused norm op on CPU); a user rule can say otherwise.
"""

from __future__ import annotations

from .categories import Rule

__all__ = ["CPU_RULES", "FRAMEWORK", "WAITING"]

#: step time inside the engine's step range not covered by any op: Python, scheduling glue
FRAMEWORK = "framework (in step, no op)"
#: step time outside the step range not covered by any op: the worker waits for the next batch
WAITING = "waiting (between steps)"

_TENSOR_OPS = (
    "add|sub|rsub|mul|div|neg|abs|exp|log|sqrt|pow_|cos|sin|new_ones|is_nonzero|__or__|__and__|maximum|minimum|clamp|round|floor|ceil|"
    "remainder|fmod|sign|copy|copy_|to|_to_copy|slice|select|view|_unsafe_view|reshape|"
    "_reshape_alias|as_strided|cat|stack|index|index_select|index_put_|_index_put_impl_|"
    "fill_|zero_|zeros|zeros_like|ones|ones_like|full|new_empty|new_zeros|empty|empty_like|"
    "empty_strided|clone|contiguous|transpose|t|permute|unsqueeze|squeeze|expand|flatten|"
    "unflatten|narrow|split|split_with_sizes|chunk|unbind|embedding|gather|scatter|where|"
    "masked_fill|lt|le|gt|ge|eq|ne|arange|cumsum|sum|item|_local_scalar_dense|detach|alias|"
    "lift_fresh|resolve_conj|resolve_neg|repeat|repeat_interleave|flip|roll|any|all|argsort|"
    "nonzero|isin|bitwise_\\w+|logical_\\w+|numpy_T|set_|resize_"
)

CPU_RULES: tuple[Rule, ...] = (
    Rule(
        "communication",
        r"shm_allreduce|all_?reduce|all_?gather|reduce_?scatter|broadcast|c10d::|gloo|"
        r"all_to_all|shm_gather",
    ),
    Rule("moe", r"fused_moe|moe_|_moe|expert|grouped_?gemm"),
    Rule(
        "attention",
        r"attention|attn|paged|kv_cache|cache_update|reshape_and_cache|rotary|rope|sdpa|"
        r"flash|slot_mapping|scheduler_metadata",
    ),
    Rule(
        "dense_gemm",
        r"onednn_mm|onednn_scaled_mm|mkldnn|gemm|ipex.*linear|woq_linear|"
        r"aten::(mm|addmm|bmm|baddbmm|matmul|linear|_addmm_activation|dot|mv)$|_C::\w*_mm$",
    ),
    Rule(
        "norm", r"rms_?norm|layer_?norm|group_?norm|aten::(native_layer_norm|pow|mean|rsqrt|var)$"
    ),
    Rule(
        "sampling",
        r"argmax|gumbel|top_?k|top_?p|sampl|multinomial|randint|exponential|log_softmax|"
        r"penalt|logits|aten::(max|topk|sort|random_|uniform_|bernoulli_)$",
    ),
    Rule("activation", r"silu|gelu|act_and_mul|swiglu|relu|sigmoid|tanh|softmax|aten::erf$"),
    Rule("elementwise/copy", rf"^aten::({_TENSOR_OPS})_?$|^aten::result_type$"),
)
