import type {
  Board,
  Group,
  Job,
  Query,
  Session,
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
