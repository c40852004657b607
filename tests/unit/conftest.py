"""Unit tests resolve Kafka versions from the pinned table in clusters/versions.py, not
from Maven Central: the same answers on every machine, online or not, and on the
day a new patch is published. (Subprocesses inherit the setting.)"""
import os

os.environ["HARNESS_KAFKA_VERSIONS"] = "pinned"
