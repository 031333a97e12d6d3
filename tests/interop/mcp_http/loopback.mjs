// Preloaded (`node --import ./loopback.mjs …`) into a server that listens on every interface
// by default (server-everything's `app.listen(PORT)`): a bare port becomes 127.0.0.1:port, so
// the tests' servers listen on loopback only.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if ((typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port))) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
