package jss;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.TreeSet;
import java.util.zip.GZIPOutputStream;
import org.apache.spark.JobExecutionStatus;
import org.apache.spark.SparkContext;
import org.apache.spark.status.AppStatusStore;
import org.apache.spark.status.api.v1.ExecutorSummary;
import org.apache.spark.status.api.v1.JobData;
import org.apache.spark.status.api.v1.StageData;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One read of a SparkContext's jobs for the job board, as one JSON reply: one py4j
 * round trip per poll, whatever the number of jobs and stages (read field by field from
 * Python, a poll with 50 running jobs took over 200 round trips, each returned object
 * one more to free it). See jupyter_spark_sessions/backends/job_feed.py
 * (ContextJobFeed), which decides what to ask for.
 *
 * <p>The reply is gzip-compressed JSON in base64: py4j holds a reply over 8 KiB about
 * 40 ms (its buffered writer sends the rest after Linux's delayed ACK), and the JSON of
 * 50 running jobs is about 35 KB; compressed, about 3 KB.
 *
 * <p>Uses Spark's status store (private[spark]) and DAG scheduler's job counter; compiled
 * against the PySpark it ships with, checked on the installed one by
 * tests/test_private_apis.py.
 */
public final class BoardReader {
    private final SparkContext sc;
    private final AppStatusStore store;
    private final ObjectMapper mapper = new ObjectMapper();
    // A failure's reason can hold a whole Python traceback: the board keeps its first line.
    private static final int MAX_REASON = 4000;
    private final List<JobExecutionStatus> running = Collections.singletonList(JobExecutionStatus.RUNNING);

    private KilledTaskWorkers killedTaskWorkers;
    private String killedTaskWorkersProblem = "";
    private volatile boolean endingKilledTaskWorkers = true;
    /** Most stage figures one read returns (the latest changed). */
    private static final int MAX_STAGE_FIGURES = 2000;
    private final StageFigures stageFigures = new StageFigures();

    public BoardReader(SparkContext sc) {
        this.sc = sc;
        this.store = sc.statusStore();
        sc.addSparkListener(stageFigures);
        try {
            killedTaskWorkers = new KilledTaskWorkers(SparkContext.class.getClassLoader());
        } catch (ReflectiveOperationException | RuntimeException | LinkageError notThisSpark) {
            killedTaskWorkersProblem = notThisSpark.toString();
        }
    }

    /**
     * Whether reads end killed tasks' Python workers (on by default; off, Spark's own
     * monitor does, on its 2-second tick: benchmarks/board_scale.py's baseline).
     */
    public void endKilledTaskWorkers(boolean on) {
        endingKilledTaskWorkers = on;
    }

    /** Why killed tasks' Python workers are left to Spark's timing ("" when they are not). */
    public String killedTaskWorkersProblem() {
        return killedTaskWorkersProblem;
    }

    /**
     * The context's state as JSON: {@code stopped}; {@code total} (jobs submitted so far:
     * ids 0..total-1); {@code running} (Spark's JobData of every running job);
     * {@code jobs} (JobData of the jobs in {@code askedCsv} and of the ids from
     * {@code fromJobId} up (negative: the last -fromJobId), that are not running, at most {@code limit}, the newest);
     * {@code missing} (ids among those the store does not have: not written yet, or
     * evicted); {@code stages} (task counts of the running jobs' active stages).
     */
    public String read(String askedCsv, int fromJobId, int limit) throws IOException {
        return read(askedCsv, fromJobId, limit, -1);
    }

    /**
     * {@link #read(String, int, int)}, and, when {@code stagesSince} is not negative,
     * {@code stageFigures} (the figures of the stages changed after that sequence
     * number: {@link StageFigures}), {@code stageSequence} (the number to ask from next
     * time) and {@code executors} (each executor's id and task slots).
     */
    public String read(String askedCsv, int fromJobId, int limit, long stagesSince)
            throws IOException {
        ObjectNode reply = mapper.createObjectNode();
        boolean stopped = sc.isStopped();
        reply.put("stopped", stopped);
        if (stopped) {
            return compressed(reply);
        }
        int total = sc.dagScheduler().numTotalJobs();
        reply.put("total", total);
        reply.put("endedWorkers", endKilledTaskWorkers());

        List<JobData> runningJobs = CollectionConverters.asJava(store.jobsList(running));
        Set<Integer> runningIds = new HashSet<>();
        Set<Integer> runningStages = new HashSet<>();
        for (JobData job : runningJobs) {
            runningIds.add(job.jobId());
            for (Object stage : CollectionConverters.asJava(job.stageIds())) {
                runningStages.add((Integer) stage);
            }
        }
        ArrayNode runningNodes = reply.putArray("running");
        for (JobData job : runningJobs) {
            runningNodes.add(jobNode(job));
        }

        TreeSet<Integer> wanted = new TreeSet<>();
        if (!askedCsv.isEmpty()) {
            for (String id : askedCsv.split(",")) {
                wanted.add(Integer.parseInt(id));
            }
        }
        int first = fromJobId >= 0 ? fromJobId : Math.max(0, total + fromJobId);
        for (int id = first; id < total; id++) {
            wanted.add(id);
        }
        wanted.removeAll(runningIds);
        while (wanted.size() > limit) {
            wanted.pollFirst();
        }
        ArrayNode jobs = reply.putArray("jobs");
        ArrayNode missing = reply.putArray("missing");
        for (int id : wanted) {
            try {
                jobs.add(jobNode(store.job(id)));
            } catch (NoSuchElementException notThere) {
                missing.add(id);
            }
        }

        // The running jobs' stages, from the status listener's live stages (what Spark's
        // console progress bar reads): the status tracker's getStageInfo looks each one
        // up through a sorted view of every stage the store keeps.
        ArrayNode stages = reply.putArray("stages");
        List<StageData> live = new ArrayList<>(CollectionConverters.asJava(store.activeStages()));
        live.sort(Comparator.comparingInt(StageData::stageId));
        for (StageData stage : live) {
            if (runningStages.contains(stage.stageId())) {
                ObjectNode node = stages.addObject();
                node.put("stageId", stage.stageId());
                node.put("currentAttemptId", stage.attemptId());
                node.put("name", stage.name());
                node.put("numTasks", stage.numTasks());
                node.put("numActiveTasks", stage.numActiveTasks());
                node.put("numCompletedTasks", stage.numCompleteTasks());
                node.put("numFailedTasks", stage.numFailedTasks());
            }
        }
        if (stagesSince >= 0) {
            reply.put("stageSequence", stageFigures.sequence());
            stageFigures.changedSince(stagesSince, MAX_STAGE_FIGURES, reply.putArray("stageFigures"));
            ArrayNode executors = reply.putArray("executors");
            for (ExecutorSummary executor : CollectionConverters.asJava(store.executorList(true))) {
                ObjectNode node = executors.addObject();
                node.put("id", executor.id());
                node.put("slots", executor.maxTasks());
            }
        }
        return compressed(reply);
    }

    // Before reading the jobs: a cancelled task whose worker ends now shows ended sooner.
    private int endKilledTaskWorkers() {
        if (killedTaskWorkers == null || !endingKilledTaskWorkers) {
            return 0;
        }
        try {
            return killedTaskWorkers.endKilled();
        } catch (ReflectiveOperationException | RuntimeException | LinkageError failed) {
            killedTaskWorkers = null; // left to Spark from now on; said once, not per poll
            killedTaskWorkersProblem = failed.toString();
            return 0;
        }
    }

    /**
     * The fields of a job the board reads (jupyter_spark_sessions/board/snapshot.py
     * {@code parse_job}), named as Spark's REST API names them. Written by hand: Jackson's
     * Scala module took a few milliseconds for 50 jobs, and wrote every field.
     */
    private ObjectNode jobNode(JobData job) {
        ObjectNode node = mapper.createObjectNode();
        node.put("jobId", job.jobId());
        node.put("name", job.name());
        if (job.submissionTime().isDefined()) {
            node.put("submissionTime", job.submissionTime().get().getTime());
        }
        if (job.completionTime().isDefined()) {
            node.put("completionTime", job.completionTime().get().getTime());
        }
        ArrayNode stageIds = node.putArray("stageIds");
        for (Object stage : CollectionConverters.asJava(job.stageIds())) {
            stageIds.add((Integer) stage);
        }
        if (job.jobGroup().isDefined()) {
            // A streaming query's micro-batch jobs: its run id (the board files them
            // under the query, not under a cell's group).
            node.put("jobGroup", job.jobGroup().get());
        }
        ArrayNode tags = node.putArray("jobTags");
        for (String tag : CollectionConverters.asJava(job.jobTags())) {
            tags.add(tag);
        }
        node.put("status", job.status().name());
        node.put("numTasks", job.numTasks());
        node.put("numActiveTasks", job.numActiveTasks());
        node.put("numCompletedTasks", job.numCompletedTasks());
        node.put("numSkippedTasks", job.numSkippedTasks());
        node.put("numSkippedStages", job.numSkippedStages());
        node.put("numFailedTasks", job.numFailedTasks());
        node.put("numKilledTasks", job.numKilledTasks());
        ObjectNode killed = node.putObject("killedTasksSummary");
        for (var reason : CollectionConverters.asJava(job.killedTasksSummary()).entrySet()) {
            killed.put(reason.getKey(), ((Number) reason.getValue()).intValue());
        }
        if (job.status() == JobExecutionStatus.FAILED) {
            String reason = failureReason(job);
            if (reason != null) {
                node.put("failureReason", reason);
            }
        }
        return node;
    }

    /**
     * Why a failed job failed: its failed stage's reason (Spark's JobData has none). Read
     * once per failed job (an ended job is read again only until the board has it).
     */
    private String failureReason(JobData job) {
        for (Object stage : CollectionConverters.asJava(job.stageIds())) {
            try {
                StageData data = store.lastStageAttempt((Integer) stage);
                if (data.failureReason().isDefined()) {
                    String reason = data.failureReason().get();
                    return reason.length() > MAX_REASON ? reason.substring(0, MAX_REASON) : reason;
                }
            } catch (NoSuchElementException evicted) {
                // a stage the store no longer keeps: look at the next one
            }
        }
        return null;
    }

    private String compressed(ObjectNode reply) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gzip = new GZIPOutputStream(bytes)) {
            mapper.writeValue(gzip, reply);
        }
        return Base64.getEncoder().encodeToString(bytes.toByteArray());
    }
}
