/**
 * The sidebar's clock: it redraws what depends on the time (elapsed times,
 * timelines and their "… ago" captions) in place. Display only: the data
 * comes from the comm's pushes, and a full render at each tick would disturb
 * the buttons under the pointer.
 */

/** Redraws one part of the sidebar for the time `now` (epoch seconds). */
export type Refresh = (now: number) => void;

/**
 * How often the clock ticks: each second while a group runs (its elapsed time
 * and bar grow); every IDLE_TICK_MS while none does, for the captions that
 * say how long ago something ran (the board sends nothing then); never while
 * the sidebar is hidden.
 */
export type TickerPace = 'running' | 'idle' | 'off';

/** Milliseconds between two ticks while no group runs. */
export const IDLE_TICK_MS = 5000;

export class ElapsedTicker {
  /** Forgets the parts of the previous render (their nodes are gone). */
  clear(): void {
    this._refreshes = [];
  }

  /** Redraws `refresh` at each tick until the next `clear`. */
  add(refresh: Refresh): void {
    this._refreshes.push(refresh);
  }

  /** Ticks at `pace` from now on (an idle pace with nothing to redraw: never). */
  run(pace: TickerPace): void {
    const period =
      pace === 'running'
        ? 1000
        : pace === 'idle' && this._refreshes.length > 0
          ? IDLE_TICK_MS
          : null;
    if (period === this._period) {
      return;
    }
    this.stop();
    if (period !== null) {
      this._timer = window.setInterval(() => this.tick(), period);
      this._period = period;
    }
  }

  stop(): void {
    if (this._timer !== null) {
      window.clearInterval(this._timer);
      this._timer = null;
    }
    this._period = null;
  }

  /** Redraws every part for the time now (a tick; also when the sidebar shows again). */
  tick(): void {
    const now = Date.now() / 1000;
    for (const refresh of this._refreshes) {
      refresh(now);
    }
  }

  private _refreshes: Refresh[] = [];
  private _timer: number | null = null;
  /** Milliseconds between ticks of the running timer (null: none). */
  private _period: number | null = null;
}
