// The API reference at /docs: the vendored Redoc renders /v1/openapi.json
// into the page, with its telemetry off (it would report to Redocly), so
// the page reaches nothing but this site.
const root = document.getElementById('api-reference');
if (root) {
  const { init } = await import(root.getAttribute('data-redoc'));
  init(root.getAttribute('data-spec'), {
    disableTelemetry: true,
    theme: { typography: { fontFamily: 'system-ui, sans-serif', headings: { fontFamily: 'system-ui, sans-serif' }, code: { fontFamily: 'ui-monospace, monospace' } } },
  }, root);
}
