// The harness's Java share-group member (workloads/java_share.py): Kafka's own
// KafkaShareConsumer (KIP-932), one member of a share group, every record it is handed
// and every acknowledgement it makes or hears about printed as one JSON line on stdout
// (the share-member journal, docs/design/share-groups.md §2.4; the same format as the
// librdkafka member's). Compiled by the harness against the kafka-clients jar of the
// image it runs in; only API present in Kafka 4.1 is used (acknowledge(record, type),
// commitSync(Duration), commitAsync(), setAcknowledgementCommitCallback, close(Duration),
// deliveryCount()).
//
// Lines: start; recv {recs: [topic, partition, offset, delivery_count, value head]} per
// non-empty poll; ack {acks: [topic, partition, offset, accept|release|reject, time]} per
// batch (our decisions); refused {acks, err} when acknowledge() threw (the client never
// took it); result {parts: [topic, partition, [offsets]], err} per acknowledgement-commit
// callback; commit {call, errs} for commitSync's own per-partition result; error {err,
// reason, fatal}; closing; closed. Times are µs since the epoch on the host's clock.
//
// Implicit mode: the previous batch's ack line (all accept) is written just before the
// call that sends it (the next poll; commitSync/commitAsync with --ack-send sync|async;
// the final commit). Explicit mode: per record, sleep --processing-ms, draw
// accept/release/reject from a Random seeded by (seed, group, name), acknowledge.
// SIGTERM: the loop stops, commitSync, closing, close(10 s), closed; exit 0 (3 after a
// fatal error). `--train 1`: the class archive's training run (no cluster; train()).
import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareMember extends Lines implements Lines.Program {
    static final int HEAD_BYTES = 64;
    static final Duration POLL = Duration.ofMillis(200), COMMIT = Duration.ofSeconds(10),
            CLOSE = Duration.ofSeconds(10);

    final Properties conf = new Properties();
    final String group, name, mode, ackSend;
    final List<String> topics;
    final double releaseRate, rejectRate;
    final long processingMs;
    final boolean explicit;
    final Random rng;
    volatile boolean stopping = false;
    KafkaShareConsumer<byte[], byte[]> consumer;
    List<ConsumerRecord<byte[], byte[]>> unwritten = new ArrayList<>();   // implicit: the batch whose ack line is due
    boolean firstRecords = true;

    ShareMember(Map<String, String> opt) throws Exception {
        try (FileInputStream in = new FileInputStream(opt.get("config"))) {
            conf.load(in);
        }
        group = opt.get("group");
        name = opt.get("name");
        topics = Arrays.asList(opt.get("topics").split(","));
        mode = opt.getOrDefault("mode", "explicit");
        explicit = mode.equals("explicit");
        ackSend = opt.getOrDefault("ack-send", "poll");
        releaseRate = Double.parseDouble(opt.getOrDefault("release-rate", "0"));
        rejectRate = Double.parseDouble(opt.getOrDefault("reject-rate", "0"));
        processingMs = Long.parseLong(opt.getOrDefault("processing-ms", "0"));
        long seed = Long.parseLong(opt.getOrDefault("seed", "0"));
        rng = new Random(seed * 961L + group.hashCode() * 31L + name.hashCode());
        // the arguments say what the member is; the file says how to reach the cluster
        conf.setProperty("group.id", group);
        conf.setProperty("client.id", name);
        conf.setProperty("share.acknowledgement.mode", mode);
        if (opt.containsKey("max-poll-records")) conf.setProperty("max.poll.records", opt.get("max-poll-records"));
    }

    // -- output -------------------------------------------------------------------------
    static String where(ConsumerRecord<byte[], byte[]> r) {
        return q(r.topic()) + "," + r.partition() + "," + r.offset();
    }

    static String head(byte[] v) {
        if (v == null) return "null";
        return q(new String(v, 0, Math.min(HEAD_BYTES, v.length), StandardCharsets.ISO_8859_1));
    }

    void recvLine(ConsumerRecords<byte[], byte[]> recs) {
        StringBuilder b = new StringBuilder("[");
        for (ConsumerRecord<byte[], byte[]> r : recs) {
            Optional<Short> count = r.deliveryCount();
            if (b.length() > 1) b.append(',');
            b.append('[').append(where(r)).append(',').append(count.isPresent() ? count.get().toString() : "null")
                    .append(',').append(head(r.value())).append(']');
        }
        emit("recv", "recs", b.append(']').toString());
    }

    static void ackLine(StringBuilder acks) {
        if (acks.length() > 0) print("{\"ev\":\"ack\",\"acks\":[" + acks + "]}");
    }

    /** The acknowledgement-commit callback (called on our thread, in poll, commit, close). */
    void onComplete(Map<TopicIdPartition, Set<Long>> offsets, Exception e) {
        StringBuilder b = new StringBuilder("[");
        for (Map.Entry<TopicIdPartition, Set<Long>> part : offsets.entrySet()) {
            if (b.length() > 1) b.append(',');
            b.append('[').append(q(part.getKey().topic())).append(',').append(part.getKey().partition())
                    .append(',').append(new TreeSet<>(part.getValue()).toString().replace(" ", "")).append(']');
        }
        emit("result", "parts", b.append(']').toString(), "err", q(errName(e)));
    }

    // -- the member ---------------------------------------------------------------------
    static boolean fatal(Exception e) {
        return e instanceof AuthenticationException || e instanceof AuthorizationException
                || e instanceof UnsupportedVersionException || e instanceof IllegalStateException;
    }

    void makeConsumer() {
        consumer = new KafkaShareConsumer<>(conf, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.setAcknowledgementCommitCallback(this::onComplete);
        consumer.subscribe(topics);
    }

    /** Implicit mode: the ack line of the batch the next call sends (all accept, now). */
    void writeImplicitAcks() {
        StringBuilder acks = new StringBuilder();
        long at = nowUs();
        for (ConsumerRecord<byte[], byte[]> r : unwritten) {
            if (acks.length() > 0) acks.append(',');
            acks.append('[').append(where(r)).append(",\"accept\",").append(at).append(']');
        }
        ackLine(acks);
        unwritten = new ArrayList<>();
    }

    /** Explicit mode: decide and acknowledge each record; one ack line for the batch. A
     *  stop in the middle leaves the rest unacknowledged (close releases them). */
    void decide(ConsumerRecords<byte[], byte[]> recs) throws InterruptedException {
        StringBuilder acks = new StringBuilder();
        for (ConsumerRecord<byte[], byte[]> r : recs) {
            if (stopping) break;
            if (processingMs > 0) Thread.sleep(processingMs);
            double u = rng.nextDouble();
            AcknowledgeType type = u < releaseRate ? AcknowledgeType.RELEASE
                    : u < releaseRate + rejectRate ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
            String decision = q(type.toString().toLowerCase());
            long at = nowUs();
            try {
                consumer.acknowledge(r, type);
            } catch (IllegalStateException | KafkaException e) {
                emit("refused", "acks", "[[" + where(r) + "," + decision + "]]", "err", q(errName(e)));
                continue;
            }
            if (acks.length() > 0) acks.append(',');
            acks.append('[').append(where(r)).append(',').append(decision).append(',').append(at).append(']');
        }
        ackLine(acks);
    }

    void commitSync() {
        if (!explicit) writeImplicitAcks();
        try {
            Map<TopicIdPartition, Optional<KafkaException>> res = consumer.commitSync(COMMIT);
            StringBuilder errs = new StringBuilder("{");
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : res.entrySet()) {
                if (!e.getValue().isPresent()) continue;
                if (errs.length() > 1) errs.append(',');
                errs.append(q(e.getKey().topic() + "-" + e.getKey().partition())).append(':')
                        .append(q(errName(e.getValue().get())));
            }
            emit("commit", "call", q("sync"), "errs", errs.append('}').toString());
        } catch (KafkaException | IllegalStateException e) {
            error(e, "commitSync", false);
        }
    }

    void send() {
        if (ackSend.equals("sync")) {
            commitSync();
        } else if (ackSend.equals("async")) {
            if (!explicit) writeImplicitAcks();
            try {
                consumer.commitAsync();
            } catch (KafkaException | IllegalStateException e) {
                error(e, "commitAsync", false);
            }
        }                                      // poll: the acknowledgements go with the next poll
    }

    /** One poll and what follows it; false when a fatal error ends the member. */
    boolean step() throws InterruptedException {
        if (!explicit) writeImplicitAcks();
        ConsumerRecords<byte[], byte[]> recs;
        try {
            recs = consumer.poll(POLL);
        } catch (KafkaException | IllegalStateException e) {
            error(e, "poll", fatal(e));
            if (fatal(e)) return false;
            Thread.sleep(100);                 // no hot loop on an error that repeats
            return true;
        }
        if (recs.isEmpty()) return true;
        if (firstRecords) mark("first records");
        firstRecords = false;
        recvLine(recs);
        if (explicit) decide(recs);
        else recs.forEach(unwritten::add);
        send();
        return true;
    }

    @Override
    public int run() throws InterruptedException {
        makeConsumer();
        emit("start", "member", q(name), "group", q(group), "mode", q(mode), "client", q("java"));
        mark("subscribed");
        int code = 0;
        while (!stopping) {
            if (!step()) {
                code = EXIT_FATAL;
                break;
            }
        }
        commitSync();
        emit("closing");
        try {
            consumer.close(CLOSE);
        } catch (KafkaException | IllegalStateException e) {
            error(e, "close", false);
        }
        emit("closed");
        return code;
    }

    /** SIGTERM: stop the loop, commit, close. */
    @Override
    public void stop() {
        stopping = true;
    }

    /** `--train 1`: the class archive's training run, with no cluster: the classes a run
     *  loads are loaded (the consumer made, a short poll, a commit, lines printed), then a
     *  normal exit, at which the JVM writes them. */
    @Override
    public void train() {
        makeConsumer();
        emit("start", "member", q(name), "group", q(group), "mode", q(mode), "client", q("java"));
        try {
            consumer.poll(Duration.ofMillis(500));
        } catch (KafkaException | IllegalStateException e) {
            error(e, "poll", false);
        }
        commitSync();
        consumer.close(Duration.ZERO);
        emit("closed");
    }

    public static void main(String[] args) {
        runProgram(args, ShareMember::new, 30000);
    }
}
