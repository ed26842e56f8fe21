// A part of a page's script that few visits reach (the hosted sign-in's enrolment) is a module of
// its own, loaded by import() when reached. The page's script is checked by its Subresource
// Integrity hash (<script integrity>), and so is each part before it runs: the build lists each
// part's file and hash in <meta name="modules"> ("enrolment assets/chunk-….js sha384-…, …"), and
// the chunks the script and its parts share are <link rel="modulepreload" integrity> in the HTML.
//
// import() itself takes no integrity (only an import map gives one, and an import map is an inline
// script, which the pages' CSP refuses). A module preload does, and puts the checked module in the
// document's module map, where import() of the same address finds it and fetches nothing: a file
// that fails its hash fails the preload, and the import() after it fails too, running nothing.
// Same-origin files under script-src 'self' could be trusted without it: whoever changes them on
// the service could change the HTML that names their hashes. SRI guards what lies between: a cache
// or a proxy in front of the service that keeps or serves a wrong file under a hashed name.

/** The file and hash the HTML lists for the part `name`; undefined when the page lists none. */
function listed(name: string): { path: string; integrity: string } | undefined {
  const content = document.querySelector<HTMLMetaElement>('meta[name="modules"]')?.content ?? '';
  const entry = content
    .split(',')
    .map((item) => item.trim().split(/\s+/))
    .find(([found]) => found === name);
  return entry?.[1] && entry[2] ? { path: entry[1], integrity: entry[2] } : undefined;
}

/**
 * The part `name` of the page's script: `load` is its import() (`() => import('./enrolment.js')`),
 * run once the file the HTML names for `name` was fetched and checked against its hash. Rejects
 * when the file cannot be had or fails the check. A browser without module preloads (Safari before
 * 17) imports it unchecked, as it imports the shared chunks the HTML preloads.
 */
export async function importChecked<T>(name: string, load: () => Promise<T>): Promise<T> {
  const file = listed(name);
  if (!file) throw new Error(`the page lists no module ${name}`);
  const link = document.createElement('link');
  if (link.relList.supports('modulepreload')) {
    link.rel = 'modulepreload';
    link.integrity = file.integrity;
    link.href = new URL(file.path, document.baseURI).href;
    await new Promise<void>((resolve, reject) => {
      link.onload = () => resolve();
      link.onerror = () => reject(new Error(`${file.path} could not be loaded, or failed its integrity check`));
      document.head.append(link);
    });
  }
  return load();
}
