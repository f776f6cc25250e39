package jss;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Ends the Python workers of killed tasks (a cancelled job's) as soon as the board next
 * polls, instead of on Spark's next look.
 *
 * <p>Spark kills the worker of a killed Python task from the task's
 * {@code BasePythonRunner.MonitorThread}, which looks every 2 seconds (a fixed
 * {@code Thread.sleep(2000)}), then waits {@code spark.python.task.killTimeout}: the
 * task holds its slot 0 to 2 s after the kill reached it, though it will never finish.
 * {@link #endKilled} makes the same decision and the same call as that thread
 * ({@code SparkEnv.destroyPythonWorker}, after the same kill timeout, counted from when
 * it first saw the task killed), and takes the monitor's {@code releasedOrClosed} flag
 * so that only one of them ends the worker. Only tasks in this JVM: executors in
 * processes of their own keep Spark's timing.
 *
 * <p>Spark's members (private[spark]) are found by reflection when this is made: a
 * Spark release without one fails there, and the board goes on without it
 * (tests/test_private_apis.py checks the installed PySpark).
 */
public final class KilledTaskWorkers {
    private final Class<?> monitorClass;
    private final Field env;
    private final Field worker;
    private final Field context;
    private final Field killTimeoutMs;
    private final Field runner;
    private final Field releasedOrClosed; // Spark 4.1 has none
    private final Method isInterrupted;
    private final Method isCompleted;
    private final Method pythonExec;
    private final Method workerModule;
    private final Method daemonModule;
    private final Method envVars;
    private final MethodHandle destroyPythonWorker;
    /** Monitors of killed tasks seen, with when first seen (ms). */
    private final Map<Thread, Long> killedSince = new WeakHashMap<>();

    public KilledTaskWorkers(ClassLoader spark) throws ReflectiveOperationException {
        String python = "org.apache.spark.api.python.";
        monitorClass = Class.forName(python + "BasePythonRunner$MonitorThread", false, spark);
        env = field("env");
        worker = field("worker");
        context = field("context");
        killTimeoutMs = field("taskKillTimeout");
        runner = field("$outer");
        Field released = null;
        try {
            released = field("releasedOrClosed");
        } catch (NoSuchFieldException olderSpark) {
            // the monitor then ends the worker a second time: a no-op for a gone worker
        }
        releasedOrClosed = released;
        Class<?> taskContext = Class.forName("org.apache.spark.TaskContext", false, spark);
        isInterrupted = taskContext.getMethod("isInterrupted");
        isCompleted = taskContext.getMethod("isCompleted");
        Class<?> runnerClass = Class.forName(python + "BasePythonRunner", false, spark);
        String mangled = "org$apache$spark$api$python$BasePythonRunner$$";
        pythonExec = runnerClass.getMethod("pythonExec");
        workerModule = runnerClass.getMethod(mangled + "workerModule");
        daemonModule = runnerClass.getMethod(mangled + "daemonModule");
        envVars = runnerClass.getMethod("envVars");
        Class<?> sparkEnv = Class.forName("org.apache.spark.SparkEnv", false, spark);
        Class<?> pythonWorker = Class.forName(python + "PythonWorker", false, spark);
        // Looked up alone: listing SparkEnv's methods needs classes Spark does not ship
        // (protobuf's, for one of them).
        MethodType destroy = MethodType.methodType(void.class, String.class, String.class,
                String.class, scala.collection.immutable.Map.class, pythonWorker);
        destroyPythonWorker = MethodHandles.publicLookup()
                .findVirtual(sparkEnv, "destroyPythonWorker", destroy);
    }

    private Field field(String name) throws NoSuchFieldException {
        Field found = monitorClass.getDeclaredField(name);
        found.setAccessible(true);
        return found;
    }

    /** End the workers of the killed tasks whose kill timeout has passed; how many. */
    public synchronized int endKilled() throws ReflectiveOperationException {
        int ended = 0;
        long now = System.currentTimeMillis();
        for (Thread thread : allThreads()) {
            if (!monitorClass.isInstance(thread) || !thread.isAlive()) {
                continue;
            }
            Object task = context.get(thread);
            if (!(Boolean) isInterrupted.invoke(task) || (Boolean) isCompleted.invoke(task)) {
                continue;
            }
            long since = killedSince.computeIfAbsent(thread, t -> now);
            if (now - since < killTimeoutMs.getLong(thread)) {
                continue;
            }
            killedSince.remove(thread);
            if (releasedOrClosed != null
                    && !((AtomicBoolean) releasedOrClosed.get(thread)).compareAndSet(false, true)) {
                continue; // released, or ended by the monitor itself
            }
            Object python = runner.get(thread);
            @SuppressWarnings("unchecked")
            Map<String, String> vars = (Map<String, String>) envVars.invoke(python);
            try {
                destroyPythonWorker.invoke(env.get(thread), (String) pythonExec.invoke(python),
                        (String) workerModule.invoke(python), (String) daemonModule.invoke(python),
                        scala.collection.immutable.Map$.MODULE$.from(
                                CollectionConverters.asScala(vars)),
                        worker.get(thread));
            } catch (ReflectiveOperationException | RuntimeException | Error failed) {
                throw failed;
            } catch (Throwable other) {
                throw new IllegalStateException(other);
            }
            ended++;
        }
        return ended;
    }

    private static Thread[] allThreads() {
        ThreadGroup root = Thread.currentThread().getThreadGroup();
        while (root.getParent() != null) {
            root = root.getParent();
        }
        Thread[] threads = new Thread[root.activeCount() * 2 + 16];
        int count = root.enumerate(threads, true);
        Thread[] found = new Thread[count];
        System.arraycopy(threads, 0, found, 0, count);
        return found;
    }
}
