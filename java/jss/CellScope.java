package jss;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayDeque;

/**
 * What a cell bound to a classic session changes on its thread, in one py4j call at
 * its start ({@link #enter}) and one at its end ({@link #exit}): the cell's job tags,
 * interrupt-on-cancel, the session's artifact state and scheduler pool for RDD jobs,
 * Spark's active session. The same changes made one py4j call each cost about 15 round trips a cell.
 *
 * <p>Loaded by jupyter_spark_sessions/backends/cell_scope.py into its own class loader
 * on the driver, so it needs nothing on Spark's class path. Spark's members are found by
 * reflection when the scope is made: a Spark release without one fails there, loudly,
 * not in a cell. Python threads are pinned to JVM threads (PYSPARK_PIN_THREAD), so a
 * thread-local here is the Python thread's.
 */
public final class CellScope {
    private static final String INTERRUPT_ON_CANCEL = "spark.job.interruptOnCancel";
    private static final String SCHEDULER_POOL = "spark.scheduler.pool";
    private static final String JOB_DESCRIPTION = "spark.job.description";
    private static final String GROUP_TAG_PREFIX = "jss:";

    /** What {@link #enter} changed on one thread, to undo it. */
    private static final class Saved {
        final String[] tags;
        final String interruptBefore;
        final boolean poolSet;
        final String poolBefore;
        final boolean stateSet;
        final Object stateBefore;
        final Object activeBefore;
        final String description; // set by enter (null: none)

        Saved(String[] tags, String interruptBefore, boolean poolSet, String poolBefore,
                boolean stateSet, Object stateBefore, Object activeBefore, String description) {
            this.tags = tags;
            this.interruptBefore = interruptBefore;
            this.poolSet = poolSet;
            this.poolBefore = poolBefore;
            this.stateSet = stateSet;
            this.stateBefore = stateBefore;
            this.activeBefore = activeBefore;
            this.description = description;
        }
    }

    private final Object sparkContext;
    private final Method addJobTag;
    private final Method removeJobTag;
    private final Method getLocalProperty;
    private final Method setLocalProperty;
    private final ThreadLocal<Object> artifactStates; // JobArtifactSet's, private
    private final Method optionApply;
    private final Method optionIsDefined;
    private final Method optionGet;
    private final Method getActiveSession;
    private final Method setActiveSession;
    private final Method clearActiveSession;
    private final ThreadLocal<ArrayDeque<Saved>> saved = ThreadLocal.withInitial(ArrayDeque::new);

    /** A scope for the cells of {@code sparkContext} (a {@code org.apache.spark.SparkContext}). */
    @SuppressWarnings("unchecked")
    public CellScope(Object sparkContext) throws ReflectiveOperationException {
        this.sparkContext = sparkContext;
        Class<?> contextClass = sparkContext.getClass();
        ClassLoader spark = contextClass.getClassLoader();
        addJobTag = contextClass.getMethod("addJobTag", String.class);
        removeJobTag = contextClass.getMethod("removeJobTag", String.class);
        getLocalProperty = contextClass.getMethod("getLocalProperty", String.class);
        setLocalProperty = contextClass.getMethod("setLocalProperty", String.class, String.class);

        Class<?> artifactSet = Class.forName("org.apache.spark.JobArtifactSet$", true, spark);
        Field holder = artifactSet.getDeclaredField("currentClientSessionState");
        holder.setAccessible(true);
        artifactStates = (ThreadLocal<Object>) holder.get(artifactSet.getField("MODULE$").get(null));

        Class<?> option = Class.forName("scala.Option", true, spark);
        optionApply = option.getMethod("apply", Object.class);
        optionIsDefined = option.getMethod("isDefined");
        optionGet = option.getMethod("get");

        Class<?> session = Class.forName("org.apache.spark.sql.classic.SparkSession", true, spark);
        getActiveSession = session.getMethod("getActiveSession");
        setActiveSession = onlyMethod(session, "setActiveSession", 1);
        clearActiveSession = session.getMethod("clearActiveSession");
    }

    private static Method onlyMethod(Class<?> owner, String name, int parameters)
            throws NoSuchMethodException {
        for (Method method : owner.getMethods()) {
            if (method.getName().equals(name) && method.getParameterCount() == parameters) {
                return method;
            }
        }
        throw new NoSuchMethodException(owner.getName() + "." + name);
    }

    /**
     * Start a cell on the current thread: add {@code tags} (comma-separated: Spark tags
     * hold no comma), interrupt tasks on cancel, run RDD jobs in {@code artifactState}
     * (a {@code JobArtifactState}; null: leave it) and in scheduler {@code pool} (null:
     * leave it), make {@code session} active.
     */
    public void enter(String tags, Object session, Object artifactState, String pool)
            throws ReflectiveOperationException {
        String[] added = tags.isEmpty() ? new String[0] : tags.split(",");
        String interruptBefore = (String) getLocalProperty.invoke(sparkContext, INTERRUPT_ON_CANCEL);
        String poolBefore = pool != null ? (String) getLocalProperty.invoke(sparkContext, SCHEDULER_POOL) : null;
        Object stateBefore = artifactState != null ? artifactStates.get() : null;
        Object activeBefore = getActiveSession.invoke(null);
        // Spark's UI lists jobs by description: name the cell's group as the board does
        // (a description the user set stays).
        String description = groupDescription(added);
        boolean describe = description != null
                && getLocalProperty.invoke(sparkContext, JOB_DESCRIPTION) == null;
        saved.get().push(new Saved(added, interruptBefore, pool != null, poolBefore,
                artifactState != null, stateBefore, activeBefore, describe ? description : null));
        if (describe) {
            setLocalProperty.invoke(sparkContext, JOB_DESCRIPTION, description);
        }
        for (String tag : added) {
            addJobTag.invoke(sparkContext, tag);
        }
        setLocalProperty.invoke(sparkContext, INTERRUPT_ON_CANCEL, "true");
        if (pool != null) {
            setLocalProperty.invoke(sparkContext, SCHEDULER_POOL, pool);
        }
        if (artifactState != null) {
            artifactStates.set(optionApply.invoke(null, artifactState));
        }
        setActiveSession.invoke(null, session);
    }

    /** End the current thread's last {@link #enter}; nothing when there was none. */
    public void exit() throws ReflectiveOperationException {
        Saved last = saved.get().poll();
        if (last == null) {
            return;
        }
        for (String tag : last.tags) {
            removeJobTag.invoke(sparkContext, tag);
        }
        setLocalProperty.invoke(sparkContext, INTERRUPT_ON_CANCEL, last.interruptBefore);
        if (last.poolSet) {
            setLocalProperty.invoke(sparkContext, SCHEDULER_POOL, last.poolBefore);
        }
        if (last.stateSet) {
            artifactStates.set(last.stateBefore);
        }
        // Ours goes; one the user set during the cell stays for their next cells.
        if (last.description != null
                && last.description.equals(getLocalProperty.invoke(sparkContext, JOB_DESCRIPTION))) {
            setLocalProperty.invoke(sparkContext, JOB_DESCRIPTION, null);
        }
        if ((Boolean) optionIsDefined.invoke(last.activeBefore)) {
            setActiveSession.invoke(null, optionGet.invoke(last.activeBefore));
        } else {
            clearActiveSession.invoke(null);
        }
    }

    /**
     * "a:19 · session a · In [19]" for a cell's tags (its group's tag is
     * {@code jss:<session>:<execution count>}, jupyter_spark_sessions/job_tags.py); null
     * without one.
     */
    static String groupDescription(String[] tags) {
        for (String tag : tags) {
            int colon = tag.lastIndexOf(':');
            if (!tag.startsWith(GROUP_TAG_PREFIX) || colon <= GROUP_TAG_PREFIX.length()
                    || colon == tag.length() - 1) {
                continue;
            }
            String count = tag.substring(colon + 1);
            if (count.chars().allMatch(Character::isDigit)) {
                String session = tag.substring(GROUP_TAG_PREFIX.length(), colon);
                return session + ":" + count + " \u00b7 session " + session + " \u00b7 In [" + count + "]";
            }
        }
        return null;
    }

    /** How many scopes the current thread has entered and not exited (for tests). */
    public int depth() {
        return saved.get().size();
    }
}
