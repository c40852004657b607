"""The fault library: faults (inject/heal), selectors, the nemesis schedule, heal-all.

    ctx = FaultContext(cluster, events=EventLog(run_dir, run_id), rng=random.Random(seed))
    with heal_all_on_exit(ctx):
        fault = Kill(leader_of("t", 0)); fault.inject(ctx); ...; fault.heal(ctx)
"""
from faults.base import BaseFault, Fault, FaultContext, FaultError, wait_full_isr
from faults.healall import heal_all, heal_all_on_exit, leftovers, sweep

__all__ = ["BaseFault", "Fault", "FaultContext", "FaultError", "wait_full_isr",
           "heal_all", "heal_all_on_exit", "leftovers", "sweep"]
