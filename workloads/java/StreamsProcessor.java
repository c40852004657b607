// The harness's Kafka Streams pipeline processor (workloads/java_streams.py,
// `client: streams`): the third processor of the pipeline family beside librdkafka's
// (workloads/pipeline_processor.py) and the Java clients' (PipelineProcessor.java),
// writing outputs of the same form: the input's key, its partition number, the value
// "pipe <record_id> <count or -> <instance> - " padded with 'x' (workloads/records.py
// pipeline_value). The transaction field is "-": Streams makes and commits its
// transactions itself (one per commit.interval.ms under exactly_once_v2) and tells its
// application neither when nor which, so the drain reads the output's pipeline_txn as
// null. Compiled by the harness against the kafka-clients jar of the image it runs in and
// the kafka-streams jars of that version (Maven Central); only API common to Streams
// 3.6+ and 4.x is used.
//
// The topology: the input topic (bytes) -> a processor counting per key in a
// KeyValueStore ("counts": RocksDB, its changelog a Streams topic of the application) ->
// the output topic, at the input's partition number (a StreamPartitioner reading the
// number the processor put beside the value). processing.guarantee is exactly_once_v2
// or at_least_once (processing:); commit.interval.ms is commit_interval_ms; application.id
// is the pipeline's group, so the instances of one pipeline share the group and its
// committed offsets; group.protocol is classic or streams (KIP-1071, 4.2+). One stream
// thread; state.dir is a tmpfs of the container (gone with it: a restarted instance
// restores its counts from the changelog).
//
// Lines (JSON on stdout; times µs since the epoch), as PipelineProcessor writes them
// where Streams can say it: pipeline-start {pid, processing, client_version,
// transaction_version, transactions, streams_protocol, application_id}; recv {a, ps,
// recs: [[partition, offset, key, record_id, null]]} (one per input, as processed; no
// leader epoch: Streams does not give it); pipeline-rebalance {type: rebalancing |
// assigned, partitions: its active input partitions}; pipeline-restore {partitions,
// keys: null, outputs: changelog records read, seconds}; pipeline-rebuild {error,
// reason, txn: null} when a stream thread died and was replaced; pipeline-stats and
// pipeline-closed {begun: null, committed (the thread's commit-total: transactions under
// exactly_once_v2), aborted: null, outputs, restores, commit_latency_max_ms (the thread's
// commit-latency-max: a commit waits for every output and changelog write of its
// transaction, seconds under a broker fault)}; error {err, reason, fatal}. No
// `commit` lines: Streams commits offsets itself and says nothing of them. SIGTERM:
// close (its last commit); exit 0, 3 after a fatal error. `--train 1`: the class
// archive's training run (no cluster).
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

public class StreamsProcessor extends PipelineProgram implements Lines.Program {
    static final long STATS_EVERY_MS = 5000;
    static final Duration CLOSE = Duration.ofSeconds(30);
    static final String STORE = "counts";
    final String protocol, stateDir;
    final int commitIntervalMs;
    final CountDownLatch done = new CountDownLatch(1);
    final AtomicLong outputs = new AtomicLong(), restores = new AtomicLong(), pollSeq = new AtomicLong();
    volatile int assignment = 0;
    volatile long commitsSeen = 0;
    volatile boolean stopping = false, fatal = false;
    KafkaStreams streams;

    StreamsProcessor(Map<String, String> opt) throws Exception {
        super(opt);
        protocol = opt.getOrDefault("streams-protocol", "classic");
        stateDir = opt.getOrDefault("state-dir", "/state");
        commitIntervalMs = Integer.parseInt(opt.getOrDefault("commit-interval-ms", "100"));
    }

    // -- values -------------------------------------------------------------------------
    /** The output's value; "-" where PipelineProcessor writes its transaction number. */
    byte[] outputValue(String rid, Long count) {
        return outputValue(rid, count, "-");
    }

    /** An output value and the partition it goes to (its input's number). */
    static final class Out {
        final byte[] value;
        final int partition;

        Out(byte[] value, int partition) {
            this.value = value;
            this.partition = partition;
        }
    }

    /** Out's partition; both methods, since 3.x asks for partition() and 4.x for partitions(). */
    static final class ToInputPartition implements StreamPartitioner<byte[], Out> {
        public Integer partition(String topic, byte[] key, Out value, int numPartitions) {
            return value.partition;
        }

        public Optional<Set<Integer>> partitions(String topic, byte[] key, Out value, int numPartitions) {
            return Optional.of(Collections.singleton(value.partition));
        }
    }

    // -- the topology -------------------------------------------------------------------
    /** Counts per key (keyed), writes one Out per input and its `recv` line. */
    final class Count implements Processor<byte[], byte[], byte[], Out> {
        ProcessorContext<byte[], Out> context;
        KeyValueStore<String, Long> counts;

        @Override
        public void init(ProcessorContext<byte[], Out> context) {
            this.context = context;
            if (keyed) counts = context.getStateStore(STORE);
        }

        @Override
        public void process(Record<byte[], byte[]> r) {
            RecordMetadata md = context.recordMetadata().orElseThrow();
            String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
            String rid = recordIdOf(r.value());
            Long count = null;
            if (keyed && key != null) {
                Long before = counts.get(key);
                count = (before == null ? 0 : before) + 1;
                counts.put(key, count);
            }
            print("{\"ev\":\"recv\",\"ts\":" + nowUs() + ",\"a\":" + assignment + ",\"ps\":"
                    + pollSeq.getAndIncrement() + ",\"recs\":[[" + md.partition() + "," + md.offset() + ","
                    + q(key) + "," + q(rid) + ",null]]}");
            String out = rid != null ? rid : "?" + md.partition() + "-" + md.offset();
            context.forward(r.withValue(new Out(outputValue(out, count), md.partition())));
            outputs.incrementAndGet();
        }
    }

    Topology topology() {
        StreamsBuilder b = new StreamsBuilder();
        if (keyed)
            b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.String(),
                    Serdes.Long()));
        Serde<Out> outSerde = Serdes.serdeFrom((topic, o) -> o == null ? null : o.value,
                (topic, bytes) -> new Out(bytes, -1));
        b.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .process(Count::new, keyed ? new String[] {STORE} : new String[0])
                .to(output, Produced.with(Serdes.ByteArray(), outSerde).withStreamPartitioner(new ToInputPartition()));
        return b.build();
    }

    Properties props() {
        Properties p = new Properties();
        p.putAll(base);
        p.put("application.id", group);
        p.put("client.id", name);
        p.put("processing.guarantee", eos ? "exactly_once_v2" : "at_least_once");
        p.put("num.stream.threads", "1");
        p.put("state.dir", stateDir);
        p.put("commit.interval.ms", String.valueOf(commitIntervalMs));
        p.put("default.key.serde", Serdes.ByteArraySerde.class.getName());
        p.put("default.value.serde", Serdes.ByteArraySerde.class.getName());
        p.put("producer.transaction.timeout.ms", String.valueOf(txnTimeoutMs));
        p.put("consumer.auto.offset.reset", "earliest");
        if (!eos) p.put("consumer.isolation.level", "read_committed");   // exactly_once_v2 sets it
        if (protocol.equals("classic")) p.put("consumer.session.timeout.ms", String.valueOf(sessionTimeoutMs));
        else p.put("group.protocol", protocol);          // the broker holds the session timeout
        return p;
    }

    // -- what it says -------------------------------------------------------------------
    /** The stream threads' commits (transactions under exactly_once_v2), -1 unknown;
     *  after close (its metrics gone) the last seen. */
    long commits() {
        KafkaStreams s = streams;
        if (s == null) return -1;
        if (s.state() == KafkaStreams.State.NOT_RUNNING || s.state() == KafkaStreams.State.ERROR)
            return commitsSeen;
        long total = 0;
        for (Map.Entry<MetricName, ? extends Metric> m : s.metrics().entrySet()) {
            if (m.getKey().name().equals("commit-total") && m.getKey().group().equals("stream-thread-metrics")
                    && m.getValue().metricValue() instanceof Double)
                total += ((Double) m.getValue().metricValue()).longValue();
        }
        commitsSeen = Math.max(commitsSeen, total);
        return commitsSeen;
    }

    /** The longest commit (a transaction's flush, offsets and commit) of the thread's
     *  metric window, ms; null unknown. */
    String commitLatencyMax() {
        KafkaStreams s = streams;
        if (s == null) return "null";
        try {
            for (Map.Entry<MetricName, ? extends Metric> m : s.metrics().entrySet()) {
                Object v = m.getValue().metricValue();
                if (m.getKey().name().equals("commit-latency-max") && m.getKey().group().equals("stream-thread-metrics")
                        && v instanceof Double && !((Double) v).isNaN())
                    return Long.toString(((Double) v).longValue());
            }
        } catch (RuntimeException e) {
            // closed meanwhile: its metrics are gone
        }
        return "null";
    }

    void statsLine(String ev) {
        long c = commits();
        print("{\"ev\":" + q(ev) + ",\"ts\":" + nowUs() + ",\"begun\":null,\"committed\":" + (c < 0 ? "null" : c)
                + ",\"aborted\":null,\"outputs\":" + outputs.get() + ",\"restores\":" + restores.get()
                + ",\"commit_latency_max_ms\":" + commitLatencyMax() + "}");
    }

    /** The cluster's finalized transaction.version (0 when it has none; -1 unknown), asked
     *  of an admin client of its own. */
    int transactionVersion() {
        try (Admin admin = Admin.create(base)) {
            return transactionVersion(admin);
        } catch (RuntimeException e) {       // the admin client could not be made or closed
            error(e, "describeFeatures", false);
            return -1;
        }
    }

    void startLine() {
        startLine(transactionVersion(), "streams_protocol", q(protocol), "application_id", q(group));
    }

    /** The input partitions this instance's stream thread processes now. */
    String activePartitions() {
        TreeSet<Integer> ps = new TreeSet<>();
        try {
            for (var thread : streams.metadataForLocalThreads())
                for (var task : thread.activeTasks())
                    for (TopicPartition tp : task.topicPartitions())
                        if (tp.topic().equals(input)) ps.add(tp.partition());
        } catch (RuntimeException e) {
            // not running (closing): no partitions to name
        }
        return ps.toString().replace(" ", "");
    }

    void onState(KafkaStreams.State now, KafkaStreams.State before) {
        if (now == KafkaStreams.State.REBALANCING || now == KafkaStreams.State.RUNNING) {
            assignment++;
            emit("pipeline-rebalance", "type", q(now == KafkaStreams.State.RUNNING ? "assigned" : "rebalancing"),
                    "partitions", activePartitions());
        } else if (now == KafkaStreams.State.ERROR) {
            if (!fatal) emit("error", "err", q("StreamsError"), "reason", q("Kafka Streams went to ERROR"),
                    "fatal", "true");
            fatal = true;
            done.countDown();
        }
    }

    static boolean fatal(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause())
            if (t instanceof AuthenticationException || t instanceof AuthorizationException
                    || t instanceof UnsupportedVersionException) return true;
        return false;
    }

    /** A stream thread died: replaced (its tasks closed dirty, their state restored),
     *  unless the cause is one a new thread would meet again. */
    StreamThreadExceptionResponse onThreadDeath(Throwable e) {
        if (fatal(e) || stopping) {
            fatal = !stopping;
            error(e, "stream thread", true);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        }
        emit("pipeline-rebuild", "error", q(errName(e)), "reason", q("stream thread: " + reason(e)), "txn", "null");
        return StreamThreadExceptionResponse.REPLACE_THREAD;
    }

    final class Restores implements StateRestoreListener {
        final Map<TopicPartition, Long> started = new HashMap<>();

        @Override
        public synchronized void onRestoreStart(TopicPartition tp, String store, long start, long end) {
            started.put(tp, System.currentTimeMillis());
        }

        @Override
        public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
        }

        @Override
        public synchronized void onRestoreEnd(TopicPartition tp, String store, long total) {
            long t0 = started.getOrDefault(tp, System.currentTimeMillis());
            restores.incrementAndGet();
            emit("pipeline-restore", "partitions", "[" + tp.partition() + "]", "keys", "null", "outputs",
                    Long.toString(total), "seconds", String.format("%.3f", (System.currentTimeMillis() - t0) / 1000.0));
        }
    }

    // -- the run ------------------------------------------------------------------------
    KafkaStreams make() {
        KafkaStreams s = new KafkaStreams(topology(), props());
        s.setStateListener(this::onState);
        s.setGlobalStateRestoreListener(new Restores());
        s.setUncaughtExceptionHandler(this::onThreadDeath);
        return s;
    }

    @Override
    public int run() throws InterruptedException {
        startLine();
        streams = make();
        streams.start();
        mark("started");
        while (!done.await(STATS_EVERY_MS, TimeUnit.MILLISECONDS)) statsLine("pipeline-stats");
        commits();                              // its metrics go with close
        streams.close(CLOSE);
        statsLine("pipeline-closed");
        statsLine("pipeline-stats");
        return fatal ? EXIT_FATAL : 0;
    }

    /** SIGTERM: close (its last commit), then exit. */
    @Override
    public void stop() {
        stopping = true;
        done.countDown();
    }

    /** `--train 1`: the classes a run loads, loaded with no cluster (the application
     *  made and started, a value made, lines printed), then a normal exit, at which the
     *  JVM writes them. */
    @Override
    public void train() throws InterruptedException {
        streams = make();
        streams.start();
        Thread.sleep(500);
        statsLine("pipeline-stats");
        print("{\"ev\":\"recv\",\"ts\":" + nowUs() + ",\"recs\":[[0,0," + q("k") + ","
                + q(recordIdOf(outputValue("p0-1", 1L))) + ",null]]}");
        streams.close(Duration.ofSeconds(5));
    }

    public static void main(String[] args) {
        runProgram(args, StreamsProcessor::new, 40000);
    }
}
