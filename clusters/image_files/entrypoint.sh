#!/bin/bash
# Starts one node. ROLE: zookeeper | kafka. The harness passes the whole config in
# NODE_CONFIG (server.properties or zoo.cfg); @SELF_IP@ is replaced with this
# container's address on the cluster network, which is only known at start.
set -euo pipefail
self_ip=$(hostname -i | awk '{print $1}')
cp_libs='/opt/kafka/libs/*'
java_opts=(-Xms${HEAP_MB:-512}m -Xmx${HEAP_MB:-512}m -XX:+UseG1GC -XX:MaxGCPauseMillis=20
           -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1 -XX:+ExitOnOutOfMemoryError
           -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true)

case "${ROLE:?ROLE must be set}" in
  zookeeper)
    printf '%s\n' "$NODE_CONFIG" > /opt/kafka/config/zoo.cfg
    echo "${NODE_ID:?}" > /var/lib/zookeeper/myid
    exec java "${java_opts[@]}" -Dzookeeper.admin.enableServer=false \
      -Dlog4j.configuration=file:/opt/kafka/log4j.properties \
      -cp "$cp_libs" org.apache.zookeeper.server.quorum.QuorumPeerMain /opt/kafka/config/zoo.cfg
    ;;
  kafka)
    printf '%s\n' "$NODE_CONFIG" | sed "s/@SELF_IP@/${self_ip}/g" > /opt/kafka/config/server.properties
    log_opts=(-Dlog4j.configuration=file:/opt/kafka/log4j.properties
              -Dlog4j2.configurationFile=/opt/kafka/log4j2.yaml
              -Dkafka.logs.dir=/tmp)
    if [ -n "${LOG_LEVELS:-}" ]; then
      # cluster.log_levels (logger=LEVEL,...): one logger each in copies of both log4j
      # files (log4j 1 up to 3.x, log4j 2 from 4.0); the YAML ends inside its Logger list.
      cp /opt/kafka/log4j.properties /opt/kafka/log4j2.yaml /tmp/
      IFS=',' read -ra pairs <<< "$LOG_LEVELS"
      for pair in "${pairs[@]}"; do
        printf 'log4j.logger.%s=%s\n' "${pair%%=*}" "${pair#*=}" >> /tmp/log4j.properties
        printf '      - name: %s\n        level: %s\n' "${pair%%=*}" "${pair#*=}" >> /tmp/log4j2.yaml
      done
      log_opts=(-Dlog4j.configuration=file:/tmp/log4j.properties
                -Dlog4j2.configurationFile=/tmp/log4j2.yaml -Dkafka.logs.dir=/tmp)
    fi
    if [ -n "${CLUSTER_ID:-}" ] && [ ! -f /var/lib/kafka/data/meta.properties ]; then
      # KRaft: format the log dir once; a restarted node keeps its data.
      # A short-lived JVM: C1 only and SerialGC spend far less CPU starting up.
      # FORMAT_ARGS: more format options (--feature NAME=LEVEL, a dynamic quorum's
      # --initial-controllers / --no-initial-controllers), word-split on purpose.
      # shellcheck disable=SC2086
      java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC "${log_opts[@]}" \
        -cp "$cp_libs" kafka.tools.StorageTool format \
        --cluster-id="$CLUSTER_ID" --config /opt/kafka/config/server.properties --ignore-formatted \
        ${FORMAT_ARGS:-}
    fi
    exec java "${java_opts[@]}" "${log_opts[@]}" \
      -javaagent:/opt/jmx/jmx_prometheus_javaagent.jar=7071:/opt/jmx/jmx.yaml \
      -cp "$cp_libs" kafka.Kafka /opt/kafka/config/server.properties
    ;;
  *)
    echo "unknown ROLE $ROLE" >&2; exit 2 ;;
esac
