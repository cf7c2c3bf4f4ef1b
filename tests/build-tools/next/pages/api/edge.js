// An edge route (the edge-light condition). A Pages Router API route: Next 16's webpack build fails an App Router
// edge route of its own accord (a missing route_client-reference-manifest.js, with or without this package).
import { smallest } from '../../smallest.js';

export const config = { runtime: 'edge' };

export default async function handler() {
  try {
    return new Response(await smallest());
  } catch (e) {
    return new Response(`${e.name}: ${e.message}`, { status: 500 });
  }
}
