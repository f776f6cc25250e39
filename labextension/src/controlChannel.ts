/**
 * Requests on a kernel's control channel, where ipykernel answers even while
 * the notebook's cell keeps the shell busy: the sidebar's probe, `list` and
 * cancel, and the in-cell view's Cancel.
 */
import { Kernel, KernelMessage } from '@jupyterlab/services';

import { CONTROL_REQUEST, isReply } from './messages';
import type { Reply, Request } from './protocol';

/** No reply within the time allowed. */
export class RequestTimeout extends Error {
  constructor(ms: number) {
    super(`The kernel did not answer within ${Math.round(ms / 1000)} s.`);
    this.name = 'RequestTimeout';
  }
}

/**
 * Sends one request on the control channel and resolves with the reply's
 * content; rejects with RequestTimeout when none comes in `timeoutMs`.
 */
export async function sendControlRequest(
  kernel: Kernel.IKernelConnection,
  content: Request,
  timeoutMs: number
): Promise<Reply> {
  const reply = await sendControlMessage(
    kernel,
    CONTROL_REQUEST,
    content,
    timeoutMs
  );
  if (!isReply(reply)) {
    throw new Error('The kernel sent a malformed reply.');
  }
  return reply;
}

/**
 * Sends a `kernel_info_request` on the control channel (ipykernel answers it
 * there while a cell is busy) and resolves with the reply's content.
 */
export function requestKernelInfo(
  kernel: Kernel.IKernelConnection,
  timeoutMs: number
): Promise<unknown> {
  return sendControlMessage(kernel, 'kernel_info_request', {}, timeoutMs);
}

/**
 * Sends one message on the control channel and resolves with its reply's
 * content; rejects with RequestTimeout when none comes in `timeoutMs`.
 * The casts for message types JupyterLab does not type on this channel live
 * here only.
 */
function sendControlMessage(
  kernel: Kernel.IKernelConnection,
  msgType: string,
  content: unknown,
  timeoutMs: number
): Promise<unknown> {
  const msg = KernelMessage.createMessage({
    channel: 'control',
    msgType: msgType as any,
    session: kernel.clientId,
    username: kernel.username,
    content: content as any
  }) as unknown as KernelMessage.IControlMessage<any>;
  const future = kernel.sendControlMessage(msg, true, true);
  return new Promise<unknown>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      if (!settled) {
        settled = true;
        future.dispose(); // stop waiting for a reply that will not come
        reject(new RequestTimeout(timeoutMs));
      }
    }, timeoutMs);
    const settle = (reply: unknown) => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(reply);
    };
    // Resolve on the reply itself: `done` also waits for the iopub idle status.
    future.onReply = (reply: KernelMessage.IControlMessage<any>) => {
      settle(reply.content);
    };
    future.done.then(
      reply => settle(reply?.content),
      error => {
        if (!settled) {
          settled = true;
          clearTimeout(timer);
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      }
    );
  });
}
