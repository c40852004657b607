/**
 * What our Java programs (TxnProducer, ShareMember, PipelineProcessor) share: their JSON
 * lines on stdout (the harness reads one object per line) and their timing marks and
 * error texts on stderr. Each program extends it and is compiled with it
 * (workloads/java_build.py).
 */
class Lines {
    /** µs since the epoch (Instant.now() has µs on Linux since Java 15; ms before). */
    static long nowUs() {
        java.time.Instant t = java.time.Instant.now();
        return t.getEpochSecond() * 1000000L + t.getNano() / 1000;
    }

    /** A JSON string, ASCII only (a value's head is Latin-1: its bytes above 0x7e escaped). */
    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static synchronized void print(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** {"ev":ev,"ts":now, then key, value pairs; values already JSON}. */
    static void emit(String ev, String... kv) {
        StringBuilder b = new StringBuilder("{\"ev\":").append(q(ev)).append(",\"ts\":").append(nowUs());
        for (int i = 0; i < kv.length; i += 2) b.append(',').append(q(kv[i])).append(':').append(kv[i + 1]);
        print(b.append('}').toString());
    }

    /** A timing mark on stderr, among the client's log lines: how long after the JVM's
     *  start each step of the start-up came, so a slow start can be told apart. */
    static void mark(String what) {
        long jvm = java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime();
        System.err.println("[" + java.time.Instant.now() + "] harness: " + what + " (+"
                + (System.currentTimeMillis() - jvm) + " ms since the JVM started)");
    }

    static String errName(Throwable e) {
        return e == null ? null : e.getClass().getSimpleName();
    }

    /** The exception and its causes, as the client logs them. */
    static String reason(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null && b.length() < 600; t = t.getCause()) {
            if (b.length() > 0) b.append(" <- ");
            b.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
        }
        return b.toString();
    }
}
