// Stray console output in a test is a bug (a forgotten debug line, or a component
// logging where it should emit an event): fail loudly instead of scrolling past.
for (const method of ['log', 'info', 'warn', 'error', 'debug']) {
  // eslint-disable-next-line no-console
  console[method] = (...args) => {
    throw new Error(`unexpected console.${method} in a test: ${args.map(String).join(' ').slice(0, 500)}`);
  };
}
