"""Verifiable producers and consumers that record every outcome (see README.md)."""
from workloads.consumer import ConsumerGroup
from workloads.drain import DrainResult, drain
from workloads.producer import ProducerProcess, reconcile_run
from workloads.spec import ConsumerGroupSpec, DrainSpec, ProducerSpec, TransactionSpec

__all__ = ["ConsumerGroup", "ConsumerGroupSpec", "DrainResult", "DrainSpec", "ProducerProcess",
           "ProducerSpec", "TransactionSpec", "drain", "reconcile_run"]
