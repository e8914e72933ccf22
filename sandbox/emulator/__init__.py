"""The partition emulator: DynamoDB's throttling in front of DynamoDB Local.

A DynamoDB-compatible HTTP endpoint that charges every request's capacity units to the
partition key values it touches (table and GSIs), throttles exactly as DynamoDB does
(``ProvisionedThroughputExceededException`` with ``ThrottlingReasons``), and keeps the
figures CloudWatch and Contributor Insights would. See :mod:`sandbox.emulator.server`;
:mod:`sandbox.emulator.inprocess` runs the same model for boto3 clients of this process
without the HTTP hop.
"""

from __future__ import annotations

from sandbox.emulator.config import EmulatorConfig, LognormalLatency, OnDemand, Provisioned
from sandbox.emulator.core import PartitionEmulator
from sandbox.emulator.inprocess import InProcessEmulator
from sandbox.emulator.server import EmulatorServer

__all__ = [
    "EmulatorConfig",
    "EmulatorServer",
    "InProcessEmulator",
    "LognormalLatency",
    "OnDemand",
    "PartitionEmulator",
    "Provisioned",
]
