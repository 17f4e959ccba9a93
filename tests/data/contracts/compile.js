// Compile Solidity sources with solcjs into one JSON file per contract
// (ABI, creation bytecode, deployed bytecode, compiler settings).
//
// usage: NODE_PATH=<dir holding node_modules/solc> node compile.js
//            [--evm-version NAME] [--out DIR] Source.sol...
// Without --evm-version the compiler's default target is used; each JSON
// records the target the compiler actually used.
"use strict";
const fs = require("fs");
const path = require("path");
const solc = require("solc");

function parseArguments(argv) {
  const options = { evmVersion: null, out: __dirname, sources: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--evm-version") options.evmVersion = argv[++i];
    else if (argv[i] === "--out") options.out = argv[++i];
    else options.sources.push(argv[i]);
  }
  if (options.sources.length === 0) throw new Error("no source given");
  return options;
}

function main() {
  const options = parseArguments(process.argv.slice(2));
  const settings = {
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { "*": { "*": ["abi", "metadata", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
  };
  if (options.evmVersion) settings.evmVersion = options.evmVersion;
  const sources = {};
  for (const file of options.sources) {
    sources[path.basename(file)] = { content: fs.readFileSync(file, "utf8") };
  }
  const input = { language: "Solidity", sources, settings };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors || []).filter((e) => e.severity === "error");
  for (const e of output.errors || []) console.error(e.formattedMessage);
  if (errors.length) process.exit(1);
  for (const [sourceName, contracts] of Object.entries(output.contracts)) {
    for (const [contractName, contract] of Object.entries(contracts)) {
      const artifact = {
        contractName,
        sourceName,
        compiler: "solcjs " + solc.version(),
        evmVersion: JSON.parse(contract.metadata).settings.evmVersion,
        optimizer: settings.optimizer,
        abi: contract.abi,
        bytecode: "0x" + contract.evm.bytecode.object,
        deployedBytecode: "0x" + contract.evm.deployedBytecode.object,
      };
      const target = path.join(options.out, contractName + ".json");
      fs.writeFileSync(target, JSON.stringify(artifact, null, 2) + "\n");
      console.log("wrote " + target);
    }
  }
}

main();
