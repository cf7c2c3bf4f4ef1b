// Preloaded into the reference server (`node --import`): whatever address it asks for, it listens on
// 127.0.0.1 only (tests never listen on other interfaces), and says where on stderr.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = typeof args[0] === 'object' && args[0] !== null ? args[0].port : args[0];
  const callback = args.find((a) => typeof a === 'function');
  this.once('listening', () => process.stderr.write(`bound 127.0.0.1:${this.address().port}\n`));
  return listen.call(this, Number(port) || 0, '127.0.0.1', callback);
};
