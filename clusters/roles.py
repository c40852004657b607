"""Node roles: what a node of a cluster is (config.py plans nodes by role, api.py's
protocols name them, migration.py changes them)."""

BROKER = "broker"            # broker only (isolated KRaft, or ZooKeeper mode)
CONTROLLER = "controller"    # KRaft controller only
COMBINED = "combined"        # KRaft broker+controller in one process
ZOOKEEPER = "zookeeper"
TOXIPROXY = "toxiproxy"

BROKER_ROLES = (BROKER, COMBINED)
CONTROLLER_ROLES = (CONTROLLER, COMBINED)
