/**
 * The two DOM helpers the sidebar and the in-cell view share.
 */

/** An element with a class and a text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A link that opens in a new tab, without giving that tab this window. */
export function externalLink(
  href: string,
  text: string,
  title: string,
  className: string
): HTMLAnchorElement {
  const link = el('a', className, text);
  link.href = href;
  link.target = '_blank';
  link.rel = 'noopener noreferrer';
  link.title = title;
  return link;
}
