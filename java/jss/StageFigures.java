package jss;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.Success$;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.StageInfo;
import org.apache.spark.scheduler.TaskInfo;

/**
 * What happens inside each stage, kept as it happens for the views' stage rows, slot
 * chart and diagnosis: a listener on the context's bus whose work per task event is a
 * few additions, and whose memory per stage is fixed (a histogram of task durations, not
 * the tasks). Spark's own status store keeps every task (up to
 * {@code spark.ui.retainedTasks}) and computes a stage's quantiles by sorting them: on a
 * job of 200,000 tasks, read once a second, that is the cost the board must not pay.
 *
 * <p>{@link BoardReader} adds it to the context and reads the stages changed since its
 * last read ({@link #changedSince}), once per poll. Counts follow Spark's own rules
 * (AppStatusListener: a task that ended killed is killed, another unsuccessful one
 * failed), so they equal the REST API's for the same stage.
 */
public final class StageFigures extends SparkListener {
    /** Stages kept (the oldest ended ones go first): Spark's spark.ui.retainedStages. */
    private static final int MAX_STAGES = 1000;
    /** Task durations by powers of 2^(1/4) ms: a median within 10%, up to 2^24 ms. */
    private static final int BUCKETS_PER_DOUBLING = 4;
    private static final int BUCKETS = 24 * BUCKETS_PER_DOUBLING + 1;

    /** One stage attempt, as it is now. */
    private static final class Stage {
        final int id;
        final int attempt;
        String name = "";
        int numTasks;
        long submitted = -1;
        long completed = -1;
        String failure;
        String firstTaskFailure;
        boolean ended;
        int active;
        int complete;
        int failed;
        int killed;
        long inputBytes;
        long shuffleReadBytes;
        long shuffleWriteBytes;
        long memorySpilledBytes;
        long diskSpilledBytes;
        long runMs;
        long gcMs;
        final int[] durations = new int[BUCKETS];
        int timed;
        long maxTaskMs = -1;
        String slowestExecutor = "";
        /** Per executor: running tasks, ended tasks, their milliseconds. */
        final Map<String, long[]> executors = new TreeMap<>();
        long changed;

        Stage(int id, int attempt) {
            this.id = id;
            this.attempt = attempt;
        }
    }

    private final Map<Long, Stage> stages = new LinkedHashMap<>();
    private long sequence;

    private static long key(int stage, int attempt) {
        return ((long) stage << 20) | attempt;
    }

    private Stage stage(int id, int attempt) {
        Stage stage = stages.get(key(id, attempt));
        if (stage == null) {
            stage = new Stage(id, attempt);
            stages.put(key(id, attempt), stage);
            evictEnded();
        }
        stage.changed = ++sequence;
        return stage;
    }

    private void evictEnded() {
        Iterator<Stage> oldest = stages.values().iterator();
        while (stages.size() > MAX_STAGES && oldest.hasNext()) {
            if (oldest.next().ended) {
                oldest.remove();
            }
        }
    }

    private static void describe(Stage stage, StageInfo info) {
        stage.name = info.name();
        stage.numTasks = info.numTasks();
        if (info.submissionTime().isDefined()) {
            stage.submitted = (Long) info.submissionTime().get();
        }
        if (info.completionTime().isDefined()) {
            stage.completed = (Long) info.completionTime().get();
        }
        if (info.failureReason().isDefined()) {
            stage.failure = info.failureReason().get();
        }
    }

    @Override
    public synchronized void onStageSubmitted(SparkListenerStageSubmitted event) {
        describe(stage(event.stageInfo().stageId(), event.stageInfo().attemptNumber()),
                event.stageInfo());
    }

    @Override
    public synchronized void onStageCompleted(SparkListenerStageCompleted event) {
        Stage stage = stage(event.stageInfo().stageId(), event.stageInfo().attemptNumber());
        describe(stage, event.stageInfo());
        stage.ended = true;
    }

    @Override
    public synchronized void onTaskStart(SparkListenerTaskStart event) {
        Stage stage = stage(event.stageId(), event.stageAttemptId());
        stage.active++;
        executor(stage, event.taskInfo().executorId())[0]++;
    }

    @Override
    public synchronized void onTaskEnd(SparkListenerTaskEnd event) {
        Stage stage = stage(event.stageId(), event.stageAttemptId());
        TaskInfo task = event.taskInfo();
        stage.active = Math.max(0, stage.active - 1);
        long[] executor = executor(stage, task.executorId());
        executor[0] = Math.max(0, executor[0] - 1);
        if (event.reason() == Success$.MODULE$) {
            stage.complete++;
        } else if (task.killed()) {
            stage.killed++;
        } else {
            stage.failed++;
            if (stage.firstTaskFailure == null && event.reason() instanceof TaskFailedReason why) {
                // Whole (bounded): a Python exception's own line is near its end.
                stage.firstTaskFailure = bounded(why.toErrorString());
            }
        }
        long duration = task.duration();
        executor[1]++;
        executor[2] += duration;
        if (!task.killed()) {
            stage.durations[bucket(duration)]++;
            stage.timed++;
            if (duration > stage.maxTaskMs) {
                stage.maxTaskMs = duration;
                stage.slowestExecutor = task.executorId();
            }
        }
        TaskMetrics metrics = event.taskMetrics();
        if (metrics != null) {
            stage.inputBytes += metrics.inputMetrics().bytesRead();
            stage.shuffleReadBytes += metrics.shuffleReadMetrics().totalBytesRead();
            stage.shuffleWriteBytes += metrics.shuffleWriteMetrics().bytesWritten();
            stage.memorySpilledBytes += metrics.memoryBytesSpilled();
            stage.diskSpilledBytes += metrics.diskBytesSpilled();
            stage.runMs += metrics.executorRunTime();
            stage.gcMs += metrics.jvmGCTime();
        }
    }

    /** At most the first 4,000 characters of a failure's text (the board reads its line). */
    private static String bounded(String text) {
        String whole = text == null ? "" : text.strip();
        return whole.length() > 4000 ? whole.substring(0, 4000) : whole;
    }

    private static long[] executor(Stage stage, String id) {
        return stage.executors.computeIfAbsent(id, e -> new long[3]);
    }

    private static int bucket(long ms) {
        double scaled = Math.log1p(Math.max(0, ms)) / Math.log(2) * BUCKETS_PER_DOUBLING;
        return (int) Math.min(BUCKETS - 1, Math.floor(scaled));
    }

    /** The middle of a bucket, in ms. */
    private static long bucketMs(int bucket) {
        return Math.round(Math.expm1((bucket + 0.5) / BUCKETS_PER_DOUBLING * Math.log(2)));
    }

    private static long medianMs(Stage stage) {
        if (stage.timed == 0) {
            return -1;
        }
        int seen = 0;
        for (int bucket = 0; bucket < BUCKETS; bucket++) {
            seen += stage.durations[bucket];
            if (2 * seen >= stage.timed) {
                return Math.min(bucketMs(bucket), stage.maxTaskMs);
            }
        }
        return stage.maxTaskMs;
    }

    /**
     * Its ended tasks that took at least half as long as the slowest (by bucket): one
     * or a few for a skewed key; a whole wave (one per slot) when every slot's first
     * task paid for starting its Python worker.
     */
    private static int slowTasks(Stage stage) {
        if (stage.maxTaskMs < 0) {
            return 0;
        }
        int count = 0;
        for (int bucket = bucket(stage.maxTaskMs / 2); bucket < BUCKETS; bucket++) {
            count += stage.durations[bucket];
        }
        return count;
    }

    /** The sequence number of the latest change (0: none yet). */
    public synchronized long sequence() {
        return sequence;
    }

    /**
     * The stages changed after {@code since} (a {@link #sequence} read before), added to
     * {@code out}, at most {@code limit} (the latest changes).
     */
    public synchronized void changedSince(long since, int limit, ArrayNode out) {
        int count = 0;
        for (Stage stage : stages.values()) {
            if (stage.changed > since) {
                count++;
            }
        }
        int skip = Math.max(0, count - limit);
        for (Stage stage : stages.values()) {
            if (stage.changed <= since || skip-- > 0) {
                continue;
            }
            write(stage, out.addObject());
        }
    }

    private static void write(Stage stage, ObjectNode node) {
        node.put("stageId", stage.id);
        node.put("attemptId", stage.attempt);
        node.put("name", stage.name);
        node.put("status", stage.ended ? (stage.failure != null ? "FAILED" : "COMPLETE") : "ACTIVE");
        node.put("numTasks", stage.numTasks);
        node.put("numActiveTasks", stage.active);
        node.put("numCompleteTasks", stage.complete);
        node.put("numFailedTasks", stage.failed);
        node.put("numKilledTasks", stage.killed);
        if (stage.submitted >= 0) {
            node.put("submissionTime", stage.submitted);
        }
        if (stage.completed >= 0) {
            node.put("completionTime", stage.completed);
        }
        if (stage.failure != null) {
            node.put("failureReason", bounded(stage.failure));
        }
        if (stage.firstTaskFailure != null) {
            node.put("firstTaskFailure", stage.firstTaskFailure);
        }
        node.put("inputBytes", stage.inputBytes);
        node.put("shuffleReadBytes", stage.shuffleReadBytes);
        node.put("shuffleWriteBytes", stage.shuffleWriteBytes);
        node.put("memoryBytesSpilled", stage.memorySpilledBytes);
        node.put("diskBytesSpilled", stage.diskSpilledBytes);
        node.put("executorRunTime", stage.runMs);
        node.put("jvmGcTime", stage.gcMs);
        node.put("medianTaskMs", medianMs(stage));
        node.put("maxTaskMs", stage.maxTaskMs);
        node.put("slowestExecutor", stage.slowestExecutor);
        node.put("slowTasks", slowTasks(stage));
        ObjectNode executors = node.putObject("executors");
        for (Map.Entry<String, long[]> entry : stage.executors.entrySet()) {
            long[] figures = entry.getValue();
            ArrayNode row = executors.putArray(entry.getKey());
            row.add(figures[0]).add(figures[1]).add(figures[2]);
        }
    }
}
