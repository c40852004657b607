// A pipeline processor's per-key counts, partition by partition, and the undo of the
// batch being processed (PipelineProcessor.java): an aborted transaction puts back every
// count its batch changed. Plain Java, no Kafka class: tests/unit/test_java_key_counts.py
// compiles and runs it with the host's JDK.
//
// Why a class of its own: the undo once lived in a map filled with putIfAbsent(key,
// before), and putIfAbsent replaces a null. A key first seen in the batch (before: none)
// and seen again in it kept 1 as its "before", so after an abort the batch's keys counted
// from 1 again: two outputs whose count jumped by 2 (state_gap) in the CI rehearsal of
// 2026-11-28 (benchmarks/evidence/java-pipeline-state-gap-20261128/).
import java.util.HashMap;
import java.util.Map;

final class KeyCounts {
    private final Map<Integer, Map<String, Long>> counts = new HashMap<>();
    // partition -> key -> its count before the batch; a null value: it had none
    private final Map<Integer, Map<String, Long>> before = new HashMap<>();

    /** A new batch: what the last one changed is kept for good. */
    void beginBatch() {
        before.clear();
    }

    /** One more of `key` in `partition`; returns its new count. */
    long increment(int partition, String key) {
        Map<String, Long> part = counts.computeIfAbsent(partition, p -> new HashMap<>());
        Long old = part.get(key);
        Map<String, Long> undo = before.computeIfAbsent(partition, p -> new HashMap<>());
        if (!undo.containsKey(key)) undo.put(key, old);     // the first change in the batch only
        long now = (old == null ? 0 : old) + 1;
        part.put(key, now);
        return now;
    }

    /** The batch's changes undone (a partition revoked since is gone from both maps). */
    void rewind() {
        for (Map.Entry<Integer, Map<String, Long>> p : before.entrySet()) {
            Map<String, Long> part = counts.get(p.getKey());
            for (Map.Entry<String, Long> k : p.getValue().entrySet()) {
                if (k.getValue() == null) part.remove(k.getKey());
                else part.put(k.getKey(), k.getValue());
            }
        }
        before.clear();
    }

    /** A partition's counts as a restore read them back. */
    void replace(int partition, Map<String, Long> restored) {
        counts.put(partition, restored);
        before.remove(partition);
    }

    void forget(int partition) {
        counts.remove(partition);
        before.remove(partition);
    }

    void clear() {
        counts.clear();
        before.clear();
    }

    /** The count of `key` in `partition`, null if none. */
    Long get(int partition, String key) {
        Map<String, Long> part = counts.get(partition);
        return part == null ? null : part.get(key);
    }
}
