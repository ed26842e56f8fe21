import type { FastifyReply } from 'fastify';
import { PAGE_HEADERS } from './routes/pages.js';

/** A form on a message page: where it posts, its hidden fields, and its one button. */
export interface PageForm {
  action: string;
  fields: Record<string, string>;
  button: string;
}

/**
 * Sends a small server-written page (the browser flow's refusals, the logout confirmation, the
 * signed-out page) in the look of the others and under the same CSP: no script, every text
 * escaped, the shared style sheet when the pages are built.
 */
export function sendMessagePage(
  reply: FastifyReply,
  page: { status: number; title: string; paragraphs: string[]; form?: PageForm; stylesheet?: string },
) {
  const form = page.form
    ? `<form method="post" action="${escapeHtml(page.form.action)}">${Object.entries(page.form.fields)
        .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
        .join('')}<div class="actions"><button type="submit">${escapeHtml(page.form.button)}</button></div></form>`
    : '';
  const stylesheet = page.stylesheet ? `<link rel="stylesheet" href="${escapeHtml(page.stylesheet)}">` : '';
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(page.title)}</title>${stylesheet}</head>
<body><main><section class="panel"><h1>${escapeHtml(page.title)}</h1>${page.paragraphs.map((text) => `<p>${escapeHtml(text)}</p>`).join('')}${form}</section></main></body>
</html>
`;
  return reply
    .code(page.status)
    .headers({ ...PAGE_HEADERS, 'cache-control': 'no-store', 'content-type': 'text/html; charset=utf-8' })
    .send(html);
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ENTITIES[character] ?? character);
}
