"""The progress line names what each active fault acts on."""
from __future__ import annotations

from faults.process import Kill
from faults.selectors import kafka_nodes
from faults.toxics import LinkToxic, timeout
from harness.run.progress import _where


class _Node:
    def __init__(self, name: str):
        self.name = name


def test_a_node_fault_names_its_nodes():
    f = Kill(kafka_nodes)
    f.targets = [_Node("kafka-1"), _Node("kafka-3")]
    assert _where(f) == "kafka-1,kafka-3"


def test_a_link_toxic_names_its_proxies_and_nothing_yet_is_a_question_mark():
    f = LinkToxic(timeout(0))
    assert _where(f) == "?"                     # not injected: no proxies chosen yet
    f.detail = {"toxic": "timeout", "proxies": ["kafka-2-client"]}
    assert _where(f) == "kafka-2-client"
