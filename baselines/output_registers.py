"""An output that a later output reads, handed over in a register instead of through memory.

Where a kernel returns two values of one chain (the whole graph's first and last Add, `tail` 2
or more with `shared_output`), the later output's block reads the earlier one's output buffer:
each thread stores the value to global memory and loads it back, a dependent round trip that
inductor's kernel does not make (it adds to the register). Here such an output is computed into
a local buffer that its readers read, and a copy block writes it to the function's output. Once
every output is placed under the thread's loop (as both the rule and the template place them),
the local buffer holds the thread's own values alone: registers. It can only remove loads, so
the rule (`rules.WholeGraphWindowReduction`) and the template take every window through it; a kernel
FuseOps made returns no value that it also reads, and is left as it was.
"""

from __future__ import annotations

import dataclasses

from tvm import s_tir


def keep_read_outputs_local(sch: s_tir.Schedule, window):
    """`window` (a `window_reduction.Window`) with each output that a later output reads
    computed into a local buffer, its copy to the function's output right after it in
    `outputs`; the window as it was where no output is read back."""
    outputs: list = []
    for index, block in enumerate(window.outputs):
        outputs.append(block)
        written = sch.get(block).writes[0].source
        readers = [
            later
            for later in window.outputs[index + 1 :]
            if any(r.source.same_as(written) for r in sch.get(later).reads)
        ]
        if readers and any(written.same_as(p) for p in sch.mod["main"].params):
            outputs.append(sch.cache_write(block, 0, "local", consumer_blocks=readers))
    return dataclasses.replace(window, outputs=tuple(outputs))
