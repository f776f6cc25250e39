package jss;

import java.io.ByteArrayInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.python.PythonRDD$;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.execution.CollectLimitExec;
import org.apache.spark.sql.execution.LocalLimitExec;
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
 * and call site), and serves them as Arrow batches on PySpark's authenticated local
 * socket in the format of {@code Dataset.collectAsArrowToPython}: an Arrow stream, then
 * the batches' order. Python reads them with PySpark's own {@code ArrowCollectSerializer}
 * and keeps the limit's number of rows ({@code backends/first_rows.py}); the conversion
 * to pandas stays PySpark's.
 *
 * <p>Where the limit sits right on a plan without a shuffle (a scan, a filter: most
 * {@code -o} queries), the tasks turn their partition's first rows into Arrow, in
 * parallel, as {@code toPandas()} does ({@code Dataset.toArrowBatchRdd} of a local
 * limit), in waves of partitions as {@code executeTake} reads them; otherwise the driver
 * takes the rows with {@code executeCollect} and converts them itself, in one thread.
 */
public final class FirstRows {
    private static final String INITIAL_PARTITIONS = "spark.sql.limit.initialNumPartitions";
    private final SparkContext context;

    public FirstRows(SparkContext context) {
        this.context = context;
    }

    /**
     * The socket's (connection info, secret, server) for the rows of {@code limited}
     * (a {@code limit(n)}) and the number of rows to keep of them; null when its plan
     * has no limit left to run (Spark knows the query has no more rows):
     * {@code toPandas()} as is then costs nothing extra, and uses the plan made here
     * (the Dataset's own, planned once).
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
        CollectLimitExec limit = (CollectLimitExec) root;
        List<byte[]> batches;
        try {
            // As Dataset.collect does (withAction): the query is on the UI's SQL tab.
            batches = SQLExecution$.MODULE$.withNewExecutionId(
                    execution, Option.apply("toPandas"), () -> {
                        plan.resetMetrics();
                        return plan == root && limit.offset() == 0
                                ? arrowFromTasks(limited, limit.child(), limit.limit(), conf)
                                : arrowFromDriver(limited, plan.executeCollect(), conf);
                    });
        } finally {
            if (raised && slots.equals(conf.getConfString(INITIAL_PARTITIONS, null))) {
                conf.unsetConf(INITIAL_PARTITIONS);
            }
        }
        StructType schema = limited.schema();
        String timeZone = conf.sessionLocalTimeZone();
        boolean largeVarTypes = conf.arrowUseLargeVarTypes();
        Object[] served = PythonRDD$.MODULE$.serveToStream("serve-Arrow", stream -> {
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
        // Python keeps the limit's rows: the tasks' last batch may hold more.
        return new Object[] {served[0], served[1], served[2], limit.limit()};
    }

    /**
     * The first {@code rows} rows of {@code child}'s partitions as Arrow batches made by
     * the tasks: a job over the first partitions, then over more (Spark's scale-up, as
     * {@code executeTake}) until they had the rows. Whole batches: the last may hold
     * more rows than needed.
     */
    private List<byte[]> arrowFromTasks(
            Dataset<Row> limited, SparkPlan child, int rows, SQLConf conf) {
        int partitions = child.execute().getNumPartitions();
        int factor = Math.max(conf.limitScaleUpFactor(), 2);
        List<byte[]> batches = new ArrayList<>();
        long found = 0;
        int scanned = 0;
        while (found < rows && scanned < partitions) {
            long next = conf.limitInitialNumPartitions();
            if (scanned > 0) {
                next = found == 0
                        ? (long) scanned * factor
                        : Math.min(
                                (long) Math.ceil(1.5 * (rows - found) * scanned / found),
                                (long) scanned * factor);
            }
            int upTo = (int) Math.min(partitions, scanned + Math.max(1, next));
            // Spark's own closures (toArrowBatchRdd's, collectPartitions'): this jar's
            // classes are on the driver only.
            JavaRDD<byte[]> arrow = limited
                    .toArrowBatchRdd(new LocalLimitExec((int) (rows - found), child))
                    .toJavaRDD();
            int[] wave = IntStream.range(scanned, upTo).toArray();
            for (List<byte[]> partition : arrow.collectPartitions(wave)) {
                for (byte[] batch : partition) {
                    if (found >= rows) {
                        break;
                    }
                    batches.add(batch);
                    found += rowsIn(batch);
                }
            }
            scanned = upTo;
        }
        return batches;
    }

    /** The rows {@code executeCollect} took, as Arrow batches made in the driver. */
    private static List<byte[]> arrowFromDriver(
            Dataset<Row> limited, InternalRow[] taken, SQLConf conf) {
        Iterator<byte[]> converted = ArrowConverters$.MODULE$.toBatchIterator(
                CollectionConverters.asScala(Arrays.asList(taken).iterator()),
                limited.schema(),
                conf.arrowMaxRecordsPerBatch(),
                conf.sessionLocalTimeZone(),
                true,
                conf.arrowUseLargeVarTypes(),
                null);
        List<byte[]> batches = new ArrayList<>();
        converted.foreach(batches::add);
        return batches;
    }

    /** The row count of an Arrow record batch message, from its header alone. */
    private static long rowsIn(byte[] batch) {
        ReadChannel channel = new ReadChannel(Channels.newChannel(new ByteArrayInputStream(batch)));
        try {
            RecordBatch header = new RecordBatch();
            MessageSerializer.readMessage(channel).getMessage().header(header);
            return header.length();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
