"""The pipeline family's anomaly kinds: what a read-process-write pipeline promises
(docs/history.md, "Pipelines"). Duplicates and repeated counts are the cost of
at-least-once processing: their default expectations hold only when every pipeline
runs exactly_once (the fact `pipeline_exactly_once`). int_send_skip and int_poll_skip
are Jepsen's contiguity checks inside one transaction, read from the committed outputs
(which transaction wrote each, which input each stands for); an at_least_once
pipeline's "transactions" are its commit batches, not atomic, so they are judged only
under exactly_once too."""
from __future__ import annotations

from families.base import Kind, distinct
from families.pipelines import checker as rows

KINDS: tuple[Kind, ...] = (
    Kind("pipeline_lost", rows.pipeline_lost, distinct("pipeline", "record_id"),
         "an acked input record that no output in the drained output log names",
         "acked inputs on {tp} never reached their pipeline's output",
         "pipeline_lost == 0", mark=("#d62728", "X")),
    Kind("pipeline_duplicate", rows.pipeline_duplicate, distinct("pipeline", "source_record_id"),
         "an input record named by outputs at two or more positions of the drained output log",
         "inputs on {tp} were written to their pipeline's output more than once",
         "pipeline_duplicate == 0 when pipeline_exactly_once", mark=("#9467bd", "D")),
    Kind("state_gap", rows.state_gap, ("rows", ()),
         "per key, in output-log order, a key_count more than one above the previous",
         "a pipeline's per-key count skipped ahead for inputs on {tp}",
         "state_gap == 0", mark=("#8c564b", "v")),
    Kind("state_repeat", rows.state_repeat, ("rows", ()),
         "per key, in output-log order, a key_count not above the previous",
         "a pipeline's per-key count repeated or went back for inputs on {tp}",
         "state_repeat == 0 when pipeline_exactly_once", mark=("#e377c2", "^")),
    Kind("int_send_skip", rows.int_send_skip, ("rows", ()),
         "two outputs of one transaction to one output partition with another writer's "
         "committed output between them",
         "a transaction's outputs for inputs on {tp} were interleaved with another writer's",
         "int_send_skip == 0 when pipeline_exactly_once", mark=("#17becf", "s")),
    Kind("int_poll_skip", rows.int_poll_skip, ("rows", ()),
         "two inputs of one partition read in one committed transaction with input records "
         "between them that it did not read",
         "a transaction reading {tp} skipped over input records",
         "int_poll_skip == 0 when pipeline_exactly_once", mark=("#bcbd22", ">")),
)
