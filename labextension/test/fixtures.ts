import type {
  Board,
  Group,
  GroupInside,
  Job,
  Query,
  Session,
  SlotChart,
  StageRow,
  TaskCounts
} from '../src/protocol';

export function tasks(partial: Partial<TaskCounts> = {}): TaskCounts {
  return {
    total: 0,
    active: 0,
    completed: 0,
    failed: 0,
    killed: 0,
    skipped: 0,
    ...partial
  };
}

export function job(partial: Partial<Job> = {}): Job {
  return {
    id: 1,
    name: 'collect at <stdin>:1',
    status: 'RUNNING',
    submitted_at: 1000,
    completed_at: null,
    tasks: tasks({ total: 8, active: 2, completed: 5, skipped: 1 }),
    stage_ids: [1],
    kill_reasons: [],
    stages: [],
    operation_id: '',
    state: 'running',
    previous_driver: false,
    error: '',
    skipped_stages: 0,
    ...partial
  };
}

export function group(partial: Partial<Group> = {}): Group {
  return {
    id: 'etl:12',
    session: 'etl',
    execution_count: 12,
    description: "df.groupBy('k').count().collect()",
    state: 'running',
    cell_running: true,
    submitted_at: 1000,
    completed_at: null,
    cancel_requested_at: null,
    tasks: tasks({ total: 8, active: 2, completed: 5, skipped: 1 }),
    tasks_still_running: 0,
    jobs: [job()],
    inside: null,
    ...partial
  };
}

export function session(partial: Partial<Session> = {}): Session {
  return {
    name: 'etl',
    origin: 'created',
    backend: 'classic',
    master: 'local[2]',
    session_id: 'abc',
    isolated: true,
    directory: '/tmp/etl',
    disconnected: '',
    files: [],
    running_jobs: 0,
    ui_url: '',
    ui_note: '',
    ui_protected: false,
    operations_page: '',
    share: '',
    slots: 0,
    packages: '',
    active_queries: 0,
    ...partial
  };
}

export function board(partial: Partial<Board> = {}): Board {
  return {
    seq: 1,
    updated_at: 1000,
    error: '',
    other_running_jobs: 0,
    sessions: [session()],
    groups: [group()],
    queries: [],
    ...partial
  };
}

/** An active rate query of etl, at batch 81, started by the cell etl:5. */
export function query(partial: Partial<Query> = {}): Query {
  return {
    id: 'a1b2c3d4-0000-4000-8000-000000000001',
    run_id: 'e5f6a7b8-0000-4000-8000-000000000002',
    name: 'rates',
    session: 'etl',
    state: 'active',
    error: '',
    started_by: 'etl:5',
    started_at: 990,
    ended_at: null,
    batch_id: 81,
    input_rows: 5,
    input_rate: 5,
    process_rate: 4.93,
    batch_duration_ms: 120,
    message: 'Waiting for data to arrive',
    stop_source: null,
    history: [
      [1000, 5, 4],
      [1001, 5, 6],
      [1002, 4, 4.93]
    ],
    ...partial
  };
}

const MiB = 1024 * 1024;

/** A complete stage of job 1 that read its input and wrote a shuffle. */
export function stageRow(partial: Partial<StageRow> = {}): StageRow {
  return {
    id: 3,
    attempt: 0,
    job: 1,
    name: 'groupBy at In [12] line 1',
    status: 'complete',
    total: 8,
    done: 8,
    active: 0,
    failed: 0,
    killed: 0,
    elapsed: 2.04,
    input_bytes: 1.2 * MiB,
    shuffle_read_bytes: 0,
    shuffle_write_bytes: 3 * MiB,
    memory_spilled_bytes: 0,
    disk_spilled_bytes: 0,
    median_task_seconds: 0.25,
    max_task_seconds: 0.4,
    ...partial
  };
}

/**
 * Executors 1 (2 slots) and 2 (4 slots) over 10 s: executor 1 full then
 * idle, executor 2 at 6 tasks once (above its slots); stages 3 and 4 start
 * together, 5 later.
 */
export function slotChart(partial: Partial<SlotChart> = {}): SlotChart {
  return {
    start: 1000,
    end: 1010,
    executors: ['1', '2'],
    slots: [2, 4],
    samples: [
      [1002, [2, 4]],
      [1005, [2, 6]],
      [1010, [0, 1]]
    ],
    stage_marks: [
      [1000, 3],
      [1000.1, 4],
      [1005, 5]
    ],
    ...partial
  };
}

/**
 * Stage 3 done, stage 4 running and skewed (its finding), two stages not
 * shown and one skipped.
 */
export function inside(partial: Partial<GroupInside> = {}): GroupInside {
  return {
    stages: [
      stageRow(),
      stageRow({
        id: 4,
        name: 'count at In [12] line 1',
        status: 'active',
        total: 200,
        done: 150,
        active: 2,
        failed: 1,
        elapsed: 12.08,
        input_bytes: 0,
        shuffle_read_bytes: 3 * MiB,
        shuffle_write_bytes: 0,
        disk_spilled_bytes: 512,
        median_task_seconds: 0.1,
        max_task_seconds: 9.8
      })
    ],
    more_stages: 2,
    skipped_stages: 1,
    unknown_stages: 0,
    chart: slotChart(),
    findings: [
      'stage 4 (count at In [12] line 1): its slowest task of 200 ran 9.8 s, 98 times the median (0.10 s): skew; repartition on a better-spread key'
    ],
    ...partial
  };
}
