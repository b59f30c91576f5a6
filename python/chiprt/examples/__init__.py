"""The example workloads in Python: the four examples the ``chiprt`` CLI runs (same names, cases
and parameters as chiprt::examples), each generating its inputs with numpy from a fixed seed,
running on a chiprt.Worker with the examples' chip objects (chiprt.paths()["chip_object_dir"],
or $CHIPRT_CHIP_OBJECT_DIR) and checking the outputs against a numpy reference.

    import chiprt, chiprt.examples
    with chiprt.Worker() as worker:
        outcome = chiprt.examples.find_example("bgemm").run(worker, "small",
                                                            runtime="tensormap_ringbuffer")
        assert outcome.passed, outcome.message

``Example.run(worker, case=None, executor=None, **config)``: config keywords go to Worker.run;
every buffer and the callable the example makes are released before it returns, also when it
raises. The registry is immutable; different Workers may run examples from different threads.
"""

from typing import Optional, Tuple

from ._support import (Comparison, Example, ExampleCase, Executor, Outcome, PreparedRun,
                       compare_results, make_outcome, run_on_worker)
from .bgemm import Bgemm
from .paged_attention import PagedAttention
from .vector_example import VectorExample
from .wavefront import Wavefront

_EXAMPLES: Tuple[Example, ...] = (VectorExample(), Bgemm(), Wavefront(), PagedAttention())


def all_examples() -> Tuple[Example, ...]:
    """Every example, in listing order (the C++ registry's)."""
    return _EXAMPLES


def find_example(name: str) -> Optional[Example]:
    """The example called ``name``, or None."""
    for example in _EXAMPLES:
        if example.name == name:
            return example
    return None


def example_names() -> str:
    """"vector_example, bgemm, wavefront, paged_attention" for error messages."""
    return ", ".join(example.name for example in _EXAMPLES)


__all__ = [
    "Comparison", "Example", "ExampleCase", "Executor", "Outcome", "PreparedRun",
    "all_examples", "compare_results", "example_names", "find_example", "make_outcome",
    "run_on_worker",
]
