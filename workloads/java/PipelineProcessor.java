// The harness's Java pipeline processor (workloads/java_pipeline.py): Kafka's own
// KafkaConsumer and KafkaProducer reading an input topic, counting per key and writing
// one output per input, the second processor of the pipeline family beside librdkafka's
// (workloads/pipeline_processor.py), writing outputs of exactly the same form: the
// input's key, its partition number, the value "pipe <record_id> <count or -> <instance>
// <txn> " padded with 'x' (workloads/records.py pipeline_value). Compiled by the harness
// against the kafka-clients jar of the image it runs in; only API common to the 3.6+ and
// 4.x clients is used (sendOffsetsToTransaction(offsets, groupMetadata): KIP-447, 2.5+).
//
// exactly_once, as Kafka's own EOS example does it: one transaction per poll batch (at
// most --records-per-txn inputs: max.poll.records): begin, send the outputs,
// sendOffsetsToTransaction(positions, consumer.groupMetadata()), commit. No transaction
// is open across a poll, so a rebalance (inside poll) never revokes a partition with
// outputs in flight. An abortable error: abort, the batch's counts undone, the consumer
// back at the committed offsets. A fencing error (ProducerFenced, InvalidProducerEpoch,
// CommitFailed, FencedInstanceId, OutOfOrderSequence, UnknownProducerId) or a commit
// still timing out: abort if it can, close both clients, forget every count, make them
// again (a new initTransactions, a new join; the counts rebuilt on assignment).
// at_least_once: an idempotent producer; the batch's outputs flushed, then commitSync.
//
// The counts, as librdkafka's processor keeps them: on every assignment, the counts of
// the new partitions are read back from the output partitions (a changelog), from the
// beginning to their high watermark (listOffsets READ_UNCOMMITTED), read_committed
// under exactly_once: a transaction open there then is waited for until it is decided.
//
// Lines (JSON on stdout; times µs since the epoch): pipeline-start {pid, processing,
// client_version, transaction_version (the cluster's finalized level), transactions
// (v1|v2: which protocol this client speaks to this cluster)}; recv {a (assignment), ps
// (poll seq of the first), recs: [partition, offset, key, record_id, leader_epoch]};
// commit {ok, err, offsets: [partition, offset]}; pipeline-rebalance {type, partitions};
// pipeline-restore {partitions, keys, outputs, seconds}; pipeline-txn-aborted {txn,
// why}; pipeline-fenced {error, reason, txn}; pipeline-stats and pipeline-closed
// {begun, committed, aborted, outputs, restores}; error {err, reason, fatal}.
// SIGTERM: the loop stops after its batch, both clients close; exit 0 (3 after a fatal
// error). `--train 1`: the class archive's training run (no cluster; train()).
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownProducerIdException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class PipelineProcessor extends PipelineProgram implements ConsumerRebalanceListener, Lines.Program {
    static final Duration POLL = Duration.ofMillis(100), CLOSE = Duration.ofSeconds(10);
    static final long STATS_EVERY_MS = 5000;
    final String txnId;
    final int recordsPerTxn;
    final long restoreTimeoutMs;
    volatile boolean stopping = false;
    KafkaConsumer<byte[], byte[]> consumer, reader;
    KafkaProducer<byte[], byte[]> producer;
    Admin admin;
    final KeyCounts state = new KeyCounts();       // partition -> key -> count, and the batch's undo
    long txnSeq = 0, pollSeq = 0, lastStats = System.currentTimeMillis();
    int assignment = 0;
    long begun = 0, committed = 0, aborted = 0, outputs = 0, restores = 0;
    volatile Exception sendError;                // at_least_once: the batch's first failed send

    PipelineProcessor(Map<String, String> opt) throws Exception {
        super(opt);
        txnId = opt.getOrDefault("transactional-id", name);
        recordsPerTxn = Integer.parseInt(opt.getOrDefault("records-per-txn", "100"));
        restoreTimeoutMs = Long.parseLong(opt.getOrDefault("restore-timeout-ms", "60000"));
    }

    // -- output -------------------------------------------------------------------------
    String stats() {
        return "\"begun\":" + begun + ",\"committed\":" + committed + ",\"aborted\":" + aborted
                + ",\"outputs\":" + outputs + ",\"restores\":" + restores;
    }

    void statsLine(String ev) {
        print("{\"ev\":" + q(ev) + ",\"ts\":" + nowUs() + "," + stats() + "}");
    }

    static String ints(Collection<Integer> xs) {
        return new TreeSet<>(xs).toString().replace(" ", "");
    }

    static List<Integer> partitionsOf(Collection<TopicPartition> tps) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : tps) out.add(tp.partition());
        return out;
    }

    // -- values -------------------------------------------------------------------------
    byte[] outputValue(String rid, Long count) {
        return outputValue(rid, count, Long.toString(txnSeq));
    }

    // -- the clients --------------------------------------------------------------------
    Properties conf(Object... kv) {
        Properties p = new Properties();
        p.putAll(base);
        for (int i = 0; i < kv.length; i += 2) p.put(kv[i], String.valueOf(kv[i + 1]));
        return p;
    }

    void makeClients() {
        Properties pc = conf("client.id", name, "enable.idempotence", true, "acks", "all", "linger.ms",
                base.getProperty("linger.ms", "5"));
        if (eos) {
            pc.put("transactional.id", txnId);
            pc.put("transaction.timeout.ms", String.valueOf(txnTimeoutMs));
            long delivery = Long.parseLong(base.getProperty("delivery.timeout.ms", "120000"));
            pc.put("delivery.timeout.ms", String.valueOf(Math.min(delivery, txnTimeoutMs)));
            // the client wants delivery.timeout.ms >= linger.ms + request.timeout.ms
            long request = Long.parseLong(base.getProperty("request.timeout.ms", "30000"));
            long linger = Long.parseLong(pc.getProperty("linger.ms"));
            pc.put("request.timeout.ms", String.valueOf(Math.min(request, Math.min(delivery, txnTimeoutMs) - linger)));
        }
        producer = new KafkaProducer<>(pc, new ByteArraySerializer(), new ByteArraySerializer());
        if (eos) initTransactions();
        consumer = new KafkaConsumer<>(conf("client.id", name, "group.id", group, "enable.auto.commit", false,
                "isolation.level", "read_committed", "auto.offset.reset", "earliest",
                "partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor",
                "session.timeout.ms", sessionTimeoutMs, "max.poll.records", recordsPerTxn),
                new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(java.util.Collections.singletonList(input), this);
    }

    void initTransactions() {
        long deadline = System.currentTimeMillis() + restoreTimeoutMs;
        Lines.initTransactions(producer, () -> stopping || System.currentTimeMillis() > deadline);
    }

    void closeClients() {
        try {
            if (consumer != null) consumer.close(CLOSE);
        } catch (KafkaException | IllegalStateException e) {
            emit("pipeline-close-error", "error", q(errName(e) + ": " + e.getMessage()));
        }
        try {
            if (producer != null) producer.close(CLOSE);
        } catch (KafkaException | IllegalStateException e) {
            emit("pipeline-close-error", "error", q(errName(e) + ": " + e.getMessage()));
        }
        consumer = null;
        producer = null;
    }

    void startLine() {
        startLine(transactionVersion(admin));
    }

    // -- rebalances ---------------------------------------------------------------------
    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
        assignment++;
        emit("pipeline-rebalance", "type", q("revoked"), "partitions", ints(partitionsOf(parts)));
        for (TopicPartition tp : parts) state.forget(tp.partition());
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> parts) {
        assignment++;
        emit("pipeline-rebalance", "type", q("lost"), "partitions", ints(partitionsOf(parts)));
        for (TopicPartition tp : parts) state.forget(tp.partition());
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
        assignment++;
        List<Integer> ps = partitionsOf(parts);
        emit("pipeline-rebalance", "type", q("assigned"), "partitions", ints(ps));
        if (!ps.isEmpty()) restore(ps);
    }

    /** The counts of these partitions' keys, from the output partitions (the header
     *  says why this is exact). A restore that cannot finish is thrown out of poll. */
    void restore(List<Integer> partitions) {
        long started = System.currentTimeMillis();
        Map<TopicPartition, Long> ends = highWatermarks(partitions);
        Map<Integer, Map<String, Long>> counts = new HashMap<>();
        for (int p : partitions) counts.put(p, new HashMap<>());
        long read = 0;
        if (!ends.isEmpty()) {
            if (reader == null)
                reader = new KafkaConsumer<>(conf("client.id", name + "-restore", "enable.auto.commit", false,
                        "isolation.level", eos ? "read_committed" : "read_uncommitted", "max.poll.records", 2000),
                        new ByteArrayDeserializer(), new ByteArrayDeserializer());
            reader.assign(ends.keySet());
            reader.seekToBeginning(ends.keySet());
            Set<TopicPartition> left = new HashSet<>(ends.keySet());
            while (!left.isEmpty()) {
                if (System.currentTimeMillis() - started > restoreTimeoutMs)
                    throw new TimeoutException("restoring " + output + " " + ints(partitions) + ": the high watermarks "
                            + ends + " not reached");
                for (ConsumerRecord<byte[], byte[]> r : reader.poll(Duration.ofMillis(200))) {
                    if (r.offset() >= ends.get(new TopicPartition(r.topic(), r.partition()))) continue;
                    read++;
                    Long c = countOf(r.value());
                    if (c != null && r.key() != null)
                        counts.get(r.partition()).put(new String(r.key(), StandardCharsets.UTF_8), c);
                }
                left.removeIf(tp -> reader.position(tp) >= ends.get(tp));
            }
            reader.unsubscribe();
        }
        int keys = 0;
        for (Map.Entry<Integer, Map<String, Long>> e : counts.entrySet()) {
            state.replace(e.getKey(), e.getValue());
            keys += e.getValue().size();
        }
        restores++;
        emit("pipeline-restore", "partitions", ints(partitions), "keys", Integer.toString(keys),
                "outputs", Long.toString(read), "seconds",
                String.format(java.util.Locale.ROOT, "%.3f", (System.currentTimeMillis() - started) / 1000.0));
    }

    /** partition -> its high watermark (not the last stable offset), those holding anything. */
    Map<TopicPartition, Long> highWatermarks(List<Integer> partitions) {
        Map<TopicPartition, OffsetSpec> want = new HashMap<>();
        for (int p : partitions) want.put(new TopicPartition(output, p), OffsetSpec.latest());
        try {
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> got = admin.listOffsets(want,
                    new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all()
                    .get(restoreTimeoutMs, TimeUnit.MILLISECONDS);
            Map<TopicPartition, Long> ends = new HashMap<>();
            for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : got.entrySet())
                if (e.getValue().offset() > 0) ends.put(e.getKey(), e.getValue().offset());
            return ends;
        } catch (Exception e) {
            throw new KafkaException("listOffsets " + output + " " + ints(partitions), e);
        }
    }

    // -- the loop -----------------------------------------------------------------------
    /** Outputs and positions of one poll batch; `state` keeps each touched key's count
     *  before the batch, so an abort can put them back (rewind). */
    Map<TopicPartition, OffsetAndMetadata> process(ConsumerRecords<byte[], byte[]> recs) {
        StringBuilder line = new StringBuilder("{\"ev\":\"recv\",\"ts\":").append(nowUs()).append(",\"a\":")
                .append(assignment).append(",\"ps\":").append(pollSeq).append(",\"recs\":[");
        boolean first = true;
        for (ConsumerRecord<byte[], byte[]> r : recs) {
            String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
            String rid = recordIdOf(r.value());
            Long count = null;
            if (keyed && key != null) count = state.increment(r.partition(), key);
            String out = rid != null ? rid : "?" + r.partition() + "-" + r.offset();
            producer.send(new ProducerRecord<>(output, r.partition(), r.key(), outputValue(out, count)), (md, e) -> {
                if (e != null && sendError == null) sendError = e;
            });
            outputs++;
            if (!first) line.append(',');
            first = false;
            line.append('[').append(r.partition()).append(',').append(r.offset()).append(',').append(q(key))
                    .append(',').append(q(rid)).append(',').append(r.leaderEpoch().map(Object::toString).orElse("null"))
                    .append(']');
        }
        print(line.append("]}").toString());
        pollSeq += recs.count();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition tp : recs.partitions()) offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
        return offsets;
    }

    void commitLine(Map<TopicPartition, OffsetAndMetadata> offsets, boolean ok, String err) {
        StringBuilder b = new StringBuilder("[");
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            if (b.length() > 1) b.append(',');
            b.append('[').append(e.getKey().partition()).append(',').append(e.getValue().offset()).append(']');
        }
        emit("commit", "ok", Boolean.toString(ok), "err", q(err), "offsets", b.append(']').toString());
    }

    static boolean fencing(Exception e) {
        return e instanceof ProducerFencedException || e instanceof InvalidProducerEpochException
                || e instanceof CommitFailedException || e instanceof FencedInstanceIdException
                || e instanceof OutOfOrderSequenceException || e instanceof UnknownProducerIdException;
    }

    static boolean fatal(Exception e) {
        return e instanceof AuthenticationException || e instanceof AuthorizationException
                || e instanceof UnsupportedVersionException;
    }

    /** One poll and its transaction (or its at-least-once commit). */
    void step() {
        ConsumerRecords<byte[], byte[]> recs;
        try {
            recs = consumer.poll(POLL);          // a rebalance, and its restore, happen in here
        } catch (KafkaException | IllegalStateException e) {
            if (e instanceof KafkaException && fatal((KafkaException) e)) throw e;
            rebuild(e, "poll");
            return;
        }
        if (recs.isEmpty()) return;
        state.beginBatch();
        if (eos) transact(recs);
        else atLeastOnce(recs);
        txnSeq++;
    }

    void transact(ConsumerRecords<byte[], byte[]> recs) {
        Map<TopicPartition, OffsetAndMetadata> offsets = Map.of();
        try {
            producer.beginTransaction();
            begun++;
            offsets = process(recs);
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            commit();
            committed++;
            commitLine(offsets, true, null);
        } catch (KafkaException | IllegalStateException e) {
            commitLine(offsets, false, errName(e));
            if (e instanceof KafkaException && fatal((KafkaException) e)) throw e;
            if (e instanceof KafkaException && !fencing((KafkaException) e) && !(e instanceof TimeoutException))
                abort((KafkaException) e);
            else
                rebuild(e, "transaction");
        }
    }

    /** The outputs flushed, then the offsets committed. An output not written: its batch
     *  is read again from the committed offsets, its counts undone (a repeat, never a
     *  gap); a commit refused: the outputs are written, the next commit covers them. */
    void atLeastOnce(ConsumerRecords<byte[], byte[]> recs) {
        sendError = null;
        Map<TopicPartition, OffsetAndMetadata> offsets = process(recs);
        producer.flush();
        if (sendError != null) {
            commitLine(offsets, false, errName(sendError));
            error(sendError, "an output", false);
            try {
                rewind();
            } catch (KafkaException | IllegalStateException e) {
                rebuild(e, "rewind");
            }
            return;
        }
        try {
            consumer.commitSync(offsets);
            commitLine(offsets, true, null);
        } catch (KafkaException e) {
            if (fatal(e)) throw e;
            commitLine(offsets, false, errName(e));
        }
    }

    /** commitTransaction; a timeout is tried again (the client allows it) until the
     *  transaction could have timed out on the broker anyway. */
    void commit() {
        long deadline = System.currentTimeMillis() + txnTimeoutMs;
        while (true) {
            try {
                producer.commitTransaction();
                return;
            } catch (TimeoutException e) {
                if (stopping || System.currentTimeMillis() > deadline) throw e;
            }
        }
    }

    /** An abortable error: abort, the batch's counts undone, back to the committed offsets. */
    void abort(KafkaException why) {
        try {
            producer.abortTransaction();
        } catch (KafkaException | IllegalStateException e) {
            rebuild(e, "abortTransaction");
            return;
        }
        aborted++;
        emit("pipeline-txn-aborted", "txn", Long.toString(txnSeq), "why", q(errName(why) + ": " + why.getMessage()));
        try {
            rewind();
        } catch (KafkaException | IllegalStateException e) {
            rebuild(e, "rewind");
        }
    }

    void rewind() {
        state.rewind();
        assignment++;                      // re-reading from the commit: a generation of its own
        Set<TopicPartition> assigned = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> at = consumer.committed(assigned);
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata o = at.get(tp);
            if (o == null) consumer.seekToBeginning(java.util.Collections.singletonList(tp));
            else consumer.seek(tp, o.offset());
        }
    }

    /** Fenced, a commit whose outcome the client cannot tell, or a poll (a restore) that
     *  failed: both clients closed and made again, every count forgotten and rebuilt at
     *  the next assignment (`pipeline-fenced` for a fencing error, else `pipeline-rebuild`). */
    void rebuild(RuntimeException why, String during) {
        boolean fenced = why instanceof KafkaException && fencing((KafkaException) why);
        emit(fenced ? "pipeline-fenced" : "pipeline-rebuild", "error", q(errName(why)), "reason",
                q(during + ": " + reason(why)), "txn", Long.toString(txnSeq));
        if (eos) {
            try {
                producer.abortTransaction();
            } catch (KafkaException | IllegalStateException e) {
                // fenced, or none open: the next initTransactions ends it on the broker
            }
        }
        closeClients();
        state.clear();
        if (!stopping) makeClients();
    }

    @Override
    public int run() {
        admin = Admin.create(conf("client.id", name + "-admin"));
        startLine();
        makeClients();
        mark("subscribed");
        int code = 0;
        try {
            while (!stopping) {
                step();
                if (System.currentTimeMillis() - lastStats >= STATS_EVERY_MS) {
                    lastStats = System.currentTimeMillis();
                    statsLine("pipeline-stats");
                }
            }
        } catch (Exception e) {
            error(e, "run", true);
            code = EXIT_FATAL;
        }
        closeClients();
        if (reader != null) reader.close(Duration.ZERO);
        admin.close(Duration.ofSeconds(1));
        statsLine("pipeline-closed");
        statsLine("pipeline-stats");
        return code;
    }

    /** SIGTERM: the batch ends, the clients close. */
    @Override
    public void stop() {
        stopping = true;
    }

    /** `--train 1`: the class archive's training run, with no cluster: the classes a run
     *  loads are loaded (the clients made, a value made and parsed, lines printed), then
     *  a normal exit, at which the JVM writes them. */
    @Override
    public void train() {
        admin = Admin.create(conf("client.id", "train-admin", "request.timeout.ms", 500,
                "default.api.timeout.ms", 1000));
        producer = new KafkaProducer<>(conf("max.block.ms", 500, "transactional.id", "train"),
                new ByteArraySerializer(), new ByteArraySerializer());
        try {
            producer.initTransactions();
        } catch (KafkaException e) {
            error(e, "initTransactions", false);
        }
        consumer = new KafkaConsumer<>(conf("group.id", "train", "isolation.level", "read_committed"),
                new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(java.util.Collections.singletonList("t"), this);
        consumer.poll(Duration.ofMillis(300));
        emit("commit", "ok", "true", "err", q(null), "offsets", "[]");
        countOf(outputValue(String.valueOf(recordIdOf("p0-1 x".getBytes(StandardCharsets.UTF_8))), 1L));
        statsLine("pipeline-stats");
        consumer.close(Duration.ZERO);
        producer.close(Duration.ZERO);
        admin.close(Duration.ZERO);
    }

    public static void main(String[] args) {
        runProgram(args, PipelineProcessor::new, 30000);
    }
}
