// A Node.js route handler (the default runtime).
import { smallest } from '../../../smallest.js';

export const dynamic = 'force-dynamic';

export async function GET() {
  try {
    return new Response(await smallest());
  } catch (e) {
    return new Response(`${e.name}: ${e.message}`, { status: 500 });
  }
}
