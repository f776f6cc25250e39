import { describe, expect, it } from 'vitest';

import { sparkJobUrl, sparkJobsUrl, sparkUiPort } from '../src/sparkUi';

describe('sparkUiPort', () => {
  it("reads the port of the driver's UI address", () => {
    expect(sparkUiPort('http://127.0.0.1:4040')).toBe(4040);
    expect(sparkUiPort('http://my-host.example:4041/')).toBe(4041);
    expect(sparkUiPort('https://driver:8443')).toBe(8443);
  });

  it('has none when the UI is off or the address is not one', () => {
    expect(sparkUiPort('')).toBeNull();
    expect(sparkUiPort('not a url')).toBeNull();
    expect(sparkUiPort('sc://localhost:15002')).toBeNull();
  });
});

describe('Spark UI links through the Jupyter server', () => {
  it("link a session to its driver's job list", () => {
    expect(
      sparkJobsUrl('http://127.0.0.1:8888/', 'http://127.0.0.1:4040')
    ).toBe('http://127.0.0.1:8888/spark-sessions/ui/4040/jobs/');
  });

  it('link a job to its page, under a base URL with or without its slash', () => {
    expect(sparkJobUrl('http://hub/user/ann/', 'http://10.0.0.5:4041', 7)).toBe(
      'http://hub/user/ann/spark-sessions/ui/4041/jobs/job/?id=7'
    );
    expect(sparkJobUrl('http://hub/user/ann', 'http://10.0.0.5:4041', 0)).toBe(
      'http://hub/user/ann/spark-sessions/ui/4041/jobs/job/?id=0'
    );
  });

  it('are absent without a UI, and for ids that are no Spark job id', () => {
    expect(sparkJobsUrl('http://h/', '')).toBeNull();
    expect(sparkJobUrl('http://h/', '', 3)).toBeNull();
    expect(sparkJobUrl('http://h/', 'http://127.0.0.1:4040', -1)).toBeNull();
    expect(sparkJobUrl('http://h/', 'http://127.0.0.1:4040', 1.5)).toBeNull();
  });
});
