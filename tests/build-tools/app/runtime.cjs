// require() of the package (Node >= 20.19 and 22.12 load an ES module with require when it has no top-level await).
const { agent, scriptedModel } = require('resumable-agent');

agent({ model: scriptedModel(['Done: required']) }).prompt('hi').then((r) => console.log(r.text), (e) => {
  console.log(`${e.name}: ${e.message}`);
  process.exitCode = 1;
});
