// The harness's Java transactional producer (workloads/java_txn.py): Kafka's own Java
// client, transactions of N records, Jepsen's knobs, every outcome printed as one JSON
// line on stdout for the harness to turn into history rows. Compiled by the harness
// against the kafka-clients jar of the image it runs in; only API common to the 3.x and
// 4.x clients is used.
//
// Lines: start; begin {txn, first, n} before a transaction's records are handed to the
// client (the intent); ack {seq, p, o, err} per delivery callback; end {txn, outcome,
// error, call, indefinite}; retry, reinit, fatal {txn, call, error, reason, policy};
// done {sent}. Exit 0 at the end of the workload, 3 after a fatal error (policy stop),
// 75 after a fatal error with policy restart (the harness starts the next incarnation).
// The duration and the rate count from the first transaction, after initTransactions.
// Start-up steps and the first transactions' times are marked on stderr ("harness: ").
// `--train 1`: the class archive's training run (no cluster; train()).
import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnProducer extends Lines {
    static final String HEADER = "harness.txn_seq";
    static final int EXIT_FATAL_STOP = 3, EXIT_FATAL_RESTART = 75;

    final Map<String, String> opt;
    final Properties conf = new Properties();
    final String topic, name;
    final int recordsPerTxn, partitionsPerTxn, delayMs, recordSize;
    final long records, durationMs, endTimeoutMs;
    final double rate, abortRate;
    final boolean reinit;
    final Random rngAbort, rngParts, rngDelay;
    volatile boolean stopping = false;
    volatile boolean timedOut = false;         // a record of the open transaction timed out
    KafkaProducer<byte[], byte[]> producer;
    List<Integer> partitions;
    long seq = 0, txn = 0, sent = 0, started;
    long flushMs;                              // the last transaction's flush (a timing mark)

    TxnProducer(Map<String, String> opt) throws Exception {
        this.opt = opt;
        try (FileInputStream in = new FileInputStream(opt.get("config"))) {
            conf.load(in);
        }
        topic = opt.get("topic");
        name = opt.get("name");
        recordsPerTxn = Integer.parseInt(opt.get("records-per-txn"));
        partitionsPerTxn = Integer.parseInt(opt.getOrDefault("partitions-per-txn", "0"));
        delayMs = Integer.parseInt(opt.getOrDefault("delay-ms", "0"));
        recordSize = Integer.parseInt(opt.getOrDefault("record-size", "100"));
        records = Long.parseLong(opt.getOrDefault("records", "-1"));
        durationMs = Long.parseLong(opt.getOrDefault("duration-ms", "-1"));
        endTimeoutMs = Long.parseLong(opt.getOrDefault("end-timeout-ms", "30000"));
        rate = Double.parseDouble(opt.getOrDefault("rate", "0"));
        abortRate = Double.parseDouble(opt.getOrDefault("abort-rate", "0"));
        reinit = "reinit".equals(opt.get("on-indefinite"));
        long seed = Long.parseLong(opt.getOrDefault("seed", "0"));
        rngAbort = new Random(seed);
        rngParts = new Random(seed * 31 + 1);
        rngDelay = new Random(seed * 31 + 2);
    }

    // -- output -------------------------------------------------------------------------
    /** {"ev":ev,"ts":now, then key, value pairs: numbers and booleans as they are,
     *  anything else quoted (Lines.emit takes values already JSON). */
    static synchronized void emitValues(String ev, Object... kv) {
        StringBuilder b = new StringBuilder("{\"ev\":").append(q(ev)).append(",\"ts\":").append(nowUs());
        for (int i = 0; i < kv.length; i += 2) {
            Object v = kv[i + 1];
            b.append(',').append(q((String) kv[i])).append(':');
            b.append(v == null ? "null" : (v instanceof Number || v instanceof Boolean) ? v.toString() : q(v.toString()));
        }
        System.out.println(b.append('}'));
        System.out.flush();
    }

    // -- the producer -------------------------------------------------------------------
    void makeProducer() {
        producer = new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer());
        mark("producer made");
        initTransactions(producer, () -> stopping);
    }

    boolean done() {
        if (stopping || (records >= 0 && seq >= records)) return true;
        return durationMs >= 0 && System.currentTimeMillis() - started >= durationMs;
    }

    void throttle() throws InterruptedException {
        if (rate <= 0) return;
        long ahead = (long) (seq * 1000.0 / rate) - (System.currentTimeMillis() - started);
        if (ahead > 0) Thread.sleep(ahead);
    }

    byte[] value(long s) {
        byte[] head = (name + "-" + s + " ").getBytes(StandardCharsets.UTF_8);
        byte[] v = new byte[Math.max(recordSize, head.length)];
        java.util.Arrays.fill(v, (byte) 'x');
        System.arraycopy(head, 0, v, 0, head.length);
        return v;
    }

    List<Integer> pick() {
        if (partitions == null) return null;
        List<Integer> all = new ArrayList<>(partitions);
        Collections.shuffle(all, rngParts);
        return all.subList(0, Math.min(partitionsPerTxn, all.size()));
    }

    /** Sends the transaction's n records; the error that stopped it early, else null
     *  (the records it could not send are reported as failed with it). */
    KafkaException send(int n) throws InterruptedException {
        List<Integer> parts = pick();
        byte[] txnSeq = Long.toString(txn).getBytes(StandardCharsets.UTF_8);
        try {
            for (int i = 0; i < n; i++) {
                if (i > 0 && delayMs > 0) Thread.sleep((long) (rngDelay.nextDouble() * delayMs));
                sendOne(seq + i, parts == null ? null : parts.get(i % parts.size()), txnSeq);
                sent = seq + i + 1;
            }
        } catch (KafkaException e) {
            for (long s = sent; s < seq + n; s++) emitValues("ack", "seq", s, "p", null, "o", null, "err", errName(e));
            seq += n;
            return e;
        }
        seq += n;
        return null;
    }

    void sendOne(final long s, Integer p, byte[] txnSeq) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, p, null, value(s));
        r.headers().add(HEADER, txnSeq);
        producer.send(r, (md, e) -> {
            if (e instanceof TimeoutException) timedOut = true;
            emitValues("ack", "seq", s, "p", md != null && md.partition() >= 0 ? md.partition() : null,
                    "o", e == null && md != null && md.hasOffset() ? md.offset() : null, "err", errName(e));
        });
    }

    static boolean fatal(KafkaException e) {
        return e instanceof ProducerFencedException || e instanceof OutOfOrderSequenceException
                || e instanceof AuthorizationException || e instanceof UnsupportedVersionException;
    }

    /** One end call (commit or abort); null when it answered, else its error. With
     *  `keep`, a timeout is tried again (the client allows it) until the workload stops. */
    KafkaException call(String what) {
        boolean retried = false;
        while (true) {
            try {
                if (what.equals("commitTransaction")) producer.commitTransaction();
                else producer.abortTransaction();
                return null;
            } catch (TimeoutException e) {
                if (reinit || done()) return e;
                if (!retried) emitValues("retry", "txn", txn, "call", what, "error", errName(e), "reason", e.getMessage());
                retried = true;
            } catch (KafkaException e) {
                return e;
            }
        }
    }

    /** Ends the open transaction; returns the exit code to end with, or -1 to go on. */
    int end(int n) {
        long f0 = System.nanoTime();
        producer.flush();
        flushMs = (System.nanoTime() - f0) / 1000000;
        boolean wantAbort = rngAbort.nextDouble() < abortRate;
        KafkaException err = wantAbort ? null : call("commitTransaction");
        int code;
        if (!wantAbort && err == null) code = ended("committed", null, null, false);
        else if (err instanceof TimeoutException || (err != null && fatal(err)))
            code = undecided("commitTransaction", err, !(err instanceof TimeoutException), null);
        else {
            KafkaException abortErr = call("abortTransaction");
            code = abortErr == null ? ended("aborted", err == null ? "ABORTED_ON_PURPOSE" : errName(err), null, false)
                    : undecided("abortTransaction", abortErr, !(abortErr instanceof TimeoutException), err);
        }
        if (code < 0 && reinit && timedOut && !stopping) reinit("a record of the transaction timed out");
        timedOut = false;
        return code;
    }

    int ended(String outcome, String error, String call, boolean indefinite) {
        emitValues("end", "txn", txn, "outcome", outcome, "error", error, "call", call, "indefinite", indefinite);
        txn++;
        return -1;
    }

    /** The transaction's outcome is unknown: a fatal error ends the producer by its
     *  policy; an indefinite one re-initialises it (it cannot go on as it is). */
    int undecided(String call, KafkaException e, boolean isFatal, KafkaException first) {
        ended("unknown", errName(first != null ? first : e), call, !isFatal);
        if (isFatal) {
            String policy = opt.getOrDefault("on-fatal", "stop");
            emitValues("fatal", "txn", txn - 1, "call", call, "error", errName(e), "reason",
                    (first != null ? reason(first) + " | then " : "") + reason(e), "policy", policy);
            return policy.equals("restart") ? EXIT_FATAL_RESTART : EXIT_FATAL_STOP;
        }
        if (!stopping) reinit(call + ": " + errName(e));
        return -1;
    }

    void reinit(String why) {
        emitValues("reinit", "txn", txn - 1, "reason", why);
        producer.close(java.time.Duration.ofSeconds(1));
        makeProducer();
    }

    int run() throws Exception {
        makeProducer();
        if (partitionsPerTxn > 0) {
            partitions = new ArrayList<>();
            for (PartitionInfo pi : producer.partitionsFor(topic)) partitions.add(pi.partition());
            Collections.sort(partitions);
        }
        emitValues("start", "name", name);
        mark("partitions known");
        // The clock starts now, as librdkafka's producer's does: the JVM's start and
        // initTransactions (the coordinator's topic made on first use) do not eat the
        // duration, and the rate is paced from the first transaction.
        started = System.currentTimeMillis();
        int code = -1;
        while (code < 0 && !done()) {
            throttle();
            long t0 = System.nanoTime();
            int n = (int) (records >= 0 ? Math.min(recordsPerTxn, records - seq) : recordsPerTxn);
            try {
                producer.beginTransaction();
            } catch (KafkaException e) {
                code = undecided("beginTransaction", e, true, null);
                break;
            }
            emitValues("begin", "txn", txn, "first", seq, "n", n);
            sent = seq;
            KafkaException refused = send(n);
            if (refused != null && fatal(refused)) {
                code = undecided("send", refused, true, null);
                break;
            }
            long t1 = System.nanoTime();
            code = end(n);
            if (txn <= 3 || txn % 50 == 0)
                mark("txn " + (txn - 1) + ": sent in " + (t1 - t0) / 1000000 + " ms, flushed in " + flushMs
                        + " ms, ended in " + (System.nanoTime() - t1) / 1000000 + " ms");
        }
        emitValues("done", "sent", seq);
        producer.close(java.time.Duration.ofSeconds(5));
        return Math.max(code, 0);
    }

    /** `--train 1`: the class archive's training run (java_txn.py), with no cluster: the
     *  classes a run loads are loaded (the producer made, initTransactions and a send
     *  timing out, a line printed), then a normal exit, at which the JVM writes them. */
    static void train(TxnProducer p) {
        p.producer = new KafkaProducer<>(p.conf, new ByteArraySerializer(), new ByteArraySerializer());
        try {
            p.producer.initTransactions();
        } catch (KafkaException e) {
            emitValues("retry", "txn", 0, "call", "initTransactions", "error", errName(e), "reason", reason(e));
        }
        try {
            p.sendOne(0, 0, "0".getBytes(StandardCharsets.UTF_8));
        } catch (KafkaException | IllegalStateException e) {
            emitValues("ack", "seq", 0, "p", null, "o", null, "err", errName(e));
        }
        p.producer.close(java.time.Duration.ZERO);
        System.exit(0);
    }

    public static void main(String[] args) throws Exception {
        mark("main");
        Map<String, String> opt = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) opt.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        TxnProducer p = new TxnProducer(opt);
        if (opt.containsKey("train")) train(p);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            p.stopping = true;                 // SIGTERM: end the open transaction, then stop
            try {
                main.join(30000);
            } catch (InterruptedException ignored) {
            }
        }));
        int code = p.run();
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }
}
