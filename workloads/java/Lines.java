import java.util.HashMap;
import java.util.Map;

/**
 * What our Java programs (TxnProducer, ShareMember, PipelineProcessor, StreamsProcessor)
 * share: their JSON lines on stdout (the harness reads one object per line), their
 * timing marks and error texts on stderr, their options, and the long-running ones'
 * main (runProgram: the training run, SIGTERM, the exit code). Each program extends it
 * and is compiled with it (workloads/java_build.py).
 */
class Lines {
    static final int EXIT_FATAL = 3;

    /** A long-running program, as runProgram runs it. */
    interface Program {
        /** The run, until it ends or stop() is called; its exit code. */
        int run() throws Exception;

        /** `--train 1`: the class archive's training run, with no cluster: the classes a
         *  run loads are loaded; a normal exit follows, at which the JVM writes them. */
        void train() throws Exception;

        /** SIGTERM: end the run as the program ends it (its batch, a commit, a close). */
        void stop();
    }

    /** A program made from its options (its constructor). */
    interface Maker {
        Program make(Map<String, String> opt) throws Exception;
    }

    /** "--name value" pairs: name -> value. */
    static Map<String, String> options(String[] args) {
        Map<String, String> opt = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) opt.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        return opt;
    }

    /** A long-running program's main: made from its options; trained and exited with
     *  `--train`; else run, SIGTERM calling stop() and then waiting up to stopWaitMs for
     *  the run to end. Exit: the run's code, EXIT_FATAL when it could not start or
     *  threw (an `error` line, fatal, says why). halt, not exit: the shutdown hook is
     *  waiting for this thread. */
    static void runProgram(String[] args, Maker maker, long stopWaitMs) {
        mark("main");
        Map<String, String> opt = options(args);
        int code;
        try {
            Program p = maker.make(opt);
            if (opt.containsKey("train")) {
                p.train();
                System.exit(0);
            }
            Thread main = Thread.currentThread();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                p.stop();
                try {
                    main.join(stopWaitMs);
                } catch (InterruptedException ignored) {
                }
            }));
            code = p.run();
        } catch (Exception e) {
            error(e, "start", true);
            e.printStackTrace();
            code = EXIT_FATAL;
        }
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }

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

    /** initTransactions, called again while it times out (the transaction coordinator is
     *  away: moving, killed, paused; the next call finds the new one), until `giveUp`
     *  says stop, when the timeout is thrown. */
    static void initTransactions(org.apache.kafka.clients.producer.Producer<?, ?> producer,
                                 java.util.function.BooleanSupplier giveUp) {
        while (true) {
            try {
                producer.initTransactions();
                mark("initTransactions done");
                return;
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                if (giveUp.getAsBoolean()) throw e;
            }
        }
    }

    /** An `error` line {err, reason: "<during>: <the exception and its causes>", fatal};
     *  the exception's name. */
    static String error(Throwable e, String during, boolean fatal) {
        emit("error", "err", q(errName(e)), "reason", q(during + ": " + reason(e)), "fatal", Boolean.toString(fatal));
        return errName(e);
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
