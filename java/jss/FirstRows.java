package jss;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.api.python.PythonRDD$;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.execution.CollectLimitExec;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SQLExecution$;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.arrow.ArrowBatchStreamWriter;
import org.apache.spark.sql.execution.arrow.ArrowConverters$;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

/**
 * The first rows of a query, served to Python as PySpark's {@code toPandas()} receives
 * a result under Arrow, without the stage {@code limit(n).toPandas()} adds.
 *
 * <p>{@code toPandas()} of a limited DataFrame executes the plan as an RDD, and Spark's
 * {@code CollectLimitExec} then shuffles each partition's first rows into one partition
 * (a second stage, whose cost grows with the rows). {@code collect()} of the same limit
 * takes the rows instead ({@code executeCollect}: the first partitions, then more, no
 * shuffle). This takes the rows that way, in the caller's thread (its job group, tags
 * and call site), turns them into Arrow batches in the driver and serves them on
 * PySpark's authenticated local socket in the format of
 * {@code Dataset.collectAsArrowToPython}: an Arrow stream, then the batches' order.
 * Python reads them with PySpark's own {@code ArrowCollectSerializer}
 * ({@code backends/first_rows.py}); the conversion to pandas stays PySpark's.
 */
public final class FirstRows {
    private static final String INITIAL_PARTITIONS = "spark.sql.limit.initialNumPartitions";
    private final SparkContext context;

    public FirstRows(SparkContext context) {
        this.context = context;
    }

    /**
     * The socket's (connection info, secret, server) for the rows of {@code limited}
     * (a {@code limit(n)}); null when its plan has no limit left to run (Spark knows the
     * query has no more rows): {@code toPandas()} as is then costs nothing extra, and
     * uses the plan made here (the Dataset's own, planned once).
     */
    public Object[] serveArrow(Dataset<Row> limited) {
        QueryExecution execution = limited.queryExecution();
        SparkPlan plan = execution.executedPlan();
        SparkPlan root =
                plan instanceof AdaptiveSparkPlanExec ? ((AdaptiveSparkPlanExec) plan).inputPlan() : plan;
        if (!(root instanceof CollectLimitExec)) {
            return null;
        }
        SQLConf conf = limited.sparkSession().sessionState().conf();
        // The take's first job reads as many partitions as there are task slots, unless
        // the session sets it (Spark's default, 1, keeps one slot busy in the first of
        // several jobs: the rows asked for here are usually a whole result). SparkPlan
        // reads its session's conf, so the setting is the session's during the take
        // (another thread's take meanwhile reads more partitions at first, same rows).
        String slots = Integer.toString(Math.max(1, context.defaultParallelism()));
        boolean raised = !conf.contains(INITIAL_PARTITIONS);
        if (raised) {
            conf.setConfString(INITIAL_PARTITIONS, slots);
        }
        InternalRow[] taken;
        try {
            // As Dataset.collect does (withAction): the query is on the UI's SQL tab.
            taken = SQLExecution$.MODULE$.withNewExecutionId(
                    execution, Option.apply("toPandas"), () -> {
                        plan.resetMetrics();
                        return plan.executeCollect();
                    });
        } finally {
            if (raised && slots.equals(conf.getConfString(INITIAL_PARTITIONS, null))) {
                conf.unsetConf(INITIAL_PARTITIONS);
            }
        }
        StructType schema = limited.schema();
        String timeZone = conf.sessionLocalTimeZone();
        boolean largeVarTypes = conf.arrowUseLargeVarTypes();
        // Converted here, not while serving: an error surfaces in this call.
        Iterator<byte[]> converted = ArrowConverters$.MODULE$.toBatchIterator(
                CollectionConverters.asScala(Arrays.asList(taken).iterator()),
                schema,
                conf.arrowMaxRecordsPerBatch(),
                timeZone,
                true,
                largeVarTypes,
                null);
        List<byte[]> batches = new ArrayList<>();
        converted.foreach(batches::add);
        return PythonRDD$.MODULE$.serveToStream("serve-Arrow", stream -> {
            try {
                DataOutputStream out = new DataOutputStream(stream);
                ArrowBatchStreamWriter writer =
                        new ArrowBatchStreamWriter(schema, out, timeZone, true, largeVarTypes);
                writer.writeBatches(CollectionConverters.asScala(batches.iterator()));
                writer.end();
                out.writeInt(batches.size()); // the batches' order: as written
                for (int index = 0; index < batches.size(); index++) {
                    out.writeInt(index);
                }
                out.flush();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return BoxedUnit.UNIT;
        });
    }
}
