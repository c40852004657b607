import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * What the two Java pipeline processors (PipelineProcessor on the Java clients,
 * StreamsProcessor on Kafka Streams) share: their common options, the record_id an input
 * carries, the output value they write and the count it carries, and their pipeline-start
 * line (the cluster's transaction.version and the protocol the client speaks to it).
 * Compiled with each of them (workloads/java_build.py, JavaProgram.shared).
 */
abstract class PipelineProgram extends Lines {
    // workloads/records.py: our producers' record_id, and Kafka's VerifiableProducer's "N.k"
    static final Pattern OURS = Pattern.compile("^[A-Za-z][A-Za-z0-9_.]*-\\d+$"),
            VERIFIABLE = Pattern.compile("^(\\d+)\\.(\\d+)$");

    final Properties base = new Properties();   // the file: how to reach the cluster, client_config
    final String pipeline, group, input, output, name, processing;
    final boolean eos, keyed;
    final int outputSize, sessionTimeoutMs, txnTimeoutMs;

    PipelineProgram(Map<String, String> opt) throws Exception {
        try (FileInputStream in = new FileInputStream(opt.get("config"))) {
            base.load(in);
        }
        pipeline = opt.get("pipeline");
        group = opt.get("group");
        input = opt.get("input");
        output = opt.get("output");
        name = opt.get("name");
        processing = opt.getOrDefault("processing", "exactly_once");
        eos = processing.equals("exactly_once");
        keyed = opt.getOrDefault("keyed", "1").equals("1");
        outputSize = Integer.parseInt(opt.getOrDefault("output-size", "100"));
        sessionTimeoutMs = Integer.parseInt(opt.getOrDefault("session-timeout-ms", "10000"));
        txnTimeoutMs = Integer.parseInt(opt.getOrDefault("transaction-timeout-ms", "10000"));
    }

    // -- values -------------------------------------------------------------------------
    /** The record_id a value carries (workloads/records.py record_id_of), else null. */
    static String recordIdOf(byte[] v) {
        if (v == null || v.length == 0) return null;
        int end = 0;
        while (end < v.length && v[end] != ' ') end++;
        String head = new String(v, 0, end, StandardCharsets.ISO_8859_1);
        if (OURS.matcher(head).matches()) return head;
        Matcher m = VERIFIABLE.matcher(head);
        return m.matches() ? "j" + Long.parseLong(m.group(1)) + "-" + Long.parseLong(m.group(2)) : null;
    }

    /** "pipe <record_id> <count or -> <instance> <txn> " padded with 'x' to output-size
     *  (workloads/records.py pipeline_value). */
    byte[] outputValue(String rid, Long count, String txn) {
        byte[] head = ("pipe " + rid + " " + (count == null ? "-" : count.toString()) + " " + name + " "
                + txn + " ").getBytes(StandardCharsets.UTF_8);
        byte[] v = new byte[Math.max(outputSize, head.length)];
        Arrays.fill(v, (byte) 'x');
        System.arraycopy(head, 0, v, 0, head.length);
        return v;
    }

    /** The count an output carries (records.py pipeline_fields_of), else null. */
    static Long countOf(byte[] v) {
        if (v == null) return null;
        String[] parts = new String(v, StandardCharsets.ISO_8859_1).split(" ", 5);
        if (parts.length < 4 || !parts[0].equals("pipe") || !parts[2].matches("\\d+")) return null;
        return Long.parseLong(parts[2]);
    }

    // -- the start line -----------------------------------------------------------------
    /** The cluster's finalized transaction.version (0 when it has none; -1 unknown). */
    static int transactionVersion(Admin admin) {
        try {
            FinalizedVersionRange r = admin.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS)
                    .finalizedFeatures().get("transaction.version");
            return r == null ? 0 : r.maxVersionLevel();
        } catch (Exception e) {
            error(e, "describeFeatures", false);
            return -1;
        }
    }

    /** pipeline-start {pid, processing, client_version, transaction_version, transactions
     *  (v1|v2: which protocol this client speaks to this cluster; unknown; null under
     *  at_least_once)}, then the program's own `extra` fields. */
    void startLine(int tv, String... extra) {
        String version = AppInfoParser.getVersion();
        int major = Integer.parseInt(version.split("\\.")[0]);
        String txns = !eos ? null : tv < 0 ? "unknown" : major >= 4 && tv >= 2 ? "v2" : "v1";
        String[] fields = {"pid", Long.toString(ProcessHandle.current().pid()), "processing", q(processing),
                "client_version", q(version), "transaction_version", Integer.toString(tv), "transactions", q(txns)};
        String[] kv = Arrays.copyOf(fields, fields.length + extra.length);
        System.arraycopy(extra, 0, kv, fields.length, extra.length);
        emit("pipeline-start", kv);
    }
}
