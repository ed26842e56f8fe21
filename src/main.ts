import { relaunchWithStartSettings } from './start-settings.js';

// The entry point (`npm start`, `node dist/main.js`). First of all: the allocator's, thread pool's
// and heap's settings take effect only in a new process (start-settings.ts). When one is started,
// it serves, and this process stays only as its launcher on Node 20: it loads nothing else, so the
// launcher holds no more than Node itself (issue 33). Otherwise the service starts here.
const relaunched = relaunchWithStartSettings();
if (relaunched) await relaunched;
await import('./service.js');
