"""Word-level language models in the idiom of pytorch/examples' word_language_model
(data.py, model.py, main.py): a ``Dictionary`` / ``Corpus`` over embedded text,
``batchify`` and ``get_batch``, truncated backpropagation through time with
``repackage_hidden``, ``clip_grad_norm_`` and the hand-written SGD update
``p.data.add_(p.grad, alpha=-lr)``, then ``evaluate`` under ``torch.no_grad()``.

Three models, as the example has had them: ``RNNModel`` over ``nn.LSTM`` (with
``init_hidden``); the older ``TransformerModel`` over ``nn.TransformerEncoderLayer`` /
``nn.TransformerEncoder`` with a ``PositionalEncoding`` buffer and the example's
``masked_fill`` causal mask; and the current one, a subclass of ``nn.Transformer`` with a
``torch.log(torch.tril(...))`` mask. Both masks are checked against
``nn.Transformer.generate_square_subsequent_mask``. Dropout is 0 so that the runs are
deterministic.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._common import abs_sums, numpy_state_dict

TRAIN = """the cat sat on the mat and the dog sat on the log
the dog saw the cat and the cat saw the dog
a bird sat on the log and sang to the cat
the mat was red and the log was brown
"""
VALID = """the cat sat on the log
the dog saw a bird on the mat
"""


class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, train, valid):
        self.dictionary = Dictionary()
        self.train = self.tokenize(train)
        self.valid = self.tokenize(valid)

    def tokenize(self, text):
        lines = text.splitlines()
        for line in lines:
            words = line.split() + ['<eos>']
            for word in words:
                self.dictionary.add_word(word)
        idss = []
        for line in lines:
            words = line.split() + ['<eos>']
            ids = []
            for word in words:
                ids.append(self.dictionary.word2idx[word])
            idss.append(torch.tensor(ids).type(torch.int64))
        ids = torch.cat(idss)
        return ids


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


class PositionalEncoding(nn.Module):
    r"""Inject some information about the relative or absolute position of the tokens in the
    sequence: sine and cosine functions of different frequencies."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Module):
    """Container module with an encoder, a transformer encoder, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerModel, self).__init__()
        try:
            from torch.nn import TransformerEncoder, TransformerEncoderLayer
        except ImportError:
            raise ImportError('TransformerEncoder module does not exist in PyTorch 1.1 or lower.')
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        encoder_layers = TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers,
                                                      enable_nested_tensor=False)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        mask = (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
        mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
        return mask

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.encoder(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


class TransformerLM(nn.Transformer):
    """The example's current TransformerModel, which subclasses ``nn.Transformer``, uses its
    ``encoder`` and replaces its ``decoder`` with the output Linear. The example passes no
    dropout to ``nn.Transformer`` (so its layers get the default 0.1); here it is passed on,
    so that the run is deterministic."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerLM, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                                            num_encoder_layers=nlayers, dropout=dropout)
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)

        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


def batchify(data, bsz, device='cpu'):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def uniform_init(name, shape, rng):
    """The example's ``initrange = 0.1`` uniform, for every parameter; LayerNorm weights
    around one."""
    if name.endswith('norm1.weight') or name.endswith('norm2.weight'):
        return 1.0 + rng.uniform(-0.1, 0.1, shape)
    return rng.uniform(-0.1, 0.1, shape)


def train_and_evaluate(model, corpus, lr, epochs, bptt=5, batch_size=4, eval_batch_size=2,
                       clip=0.25):
    train_data = batchify(corpus.train, batch_size)
    val_data = batchify(corpus.valid, eval_batch_size)
    ntokens = len(corpus.dictionary)
    criterion = nn.NLLLoss()
    is_transformer = isinstance(model, (TransformerModel, TransformerLM))

    def evaluate(data_source):
        model.eval()
        total_loss = 0.
        if not is_transformer:
            hidden = model.init_hidden(eval_batch_size)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                data, targets = get_batch(data_source, i, bptt)
                if is_transformer:
                    output = model(data)
                    output = output.view(-1, ntokens)
                else:
                    output, hidden = model(data, hidden)
                    hidden = repackage_hidden(hidden)
                total_loss += len(data) * criterion(output, targets).item()
        return total_loss / (len(data_source) - 1)

    losses, val_losses = [], []
    for epoch in range(1, epochs + 1):
        model.train()
        if not is_transformer:
            hidden = model.init_hidden(batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i, bptt)
            # Starting each batch, we detach the hidden state from how it was previously produced.
            model.zero_grad()
            if is_transformer:
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                hidden = repackage_hidden(hidden)
                output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()

            # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        val_loss = evaluate(val_data)
        val_losses.append(val_loss)
        # The example's learning-rate annealing when validation stops improving.
        if len(val_losses) > 1 and val_loss > min(val_losses[:-1]):
            lr /= 4.0
    return losses, val_losses


def run(seed=1111):
    corpus = Corpus(TRAIN, VALID)
    ntokens = len(corpus.dictionary)

    lstm = RNNModel('LSTM', ntokens, 16, 16, 2, dropout=0.0)
    lstm.load_state_dict(numpy_state_dict(lstm, seed, draw=uniform_init))
    lstm_losses, lstm_val = train_and_evaluate(lstm, corpus, lr=5.0, epochs=3)

    tr = TransformerModel(ntokens, 16, 2, 32, 2, dropout=0.0)
    tr.load_state_dict(numpy_state_dict(tr, seed, draw=uniform_init))
    tr_losses, tr_val = train_and_evaluate(tr, corpus, lr=0.5, epochs=3)

    tr2 = TransformerLM(ntokens, 16, 2, 32, 1, dropout=0.0)
    tr2.load_state_dict(numpy_state_dict(tr2, seed, draw=uniform_init))
    tr2_losses, tr2_val = train_and_evaluate(tr2, corpus, lr=0.5, epochs=3)
    reference = nn.Transformer.generate_square_subsequent_mask(5)
    return {
        'ntokens': ntokens,
        'lstm_losses': lstm_losses,
        'lstm_val_losses': lstm_val,
        'lstm_sums': abs_sums(lstm),
        'transformer_losses': tr_losses,
        'transformer_val_losses': tr_val,
        'transformer_sums': abs_sums(tr),
        'transformer_lm_losses': tr2_losses,
        'transformer_lm_val_losses': tr2_val,
        'transformer_lm_sums': abs_sums(tr2),
        'masks_match_nn_transformer': [
            bool(torch.equal(tr._generate_square_subsequent_mask(5), reference)),
            bool(torch.equal(tr2._generate_square_subsequent_mask(5), reference))],
        'pe_sum': tr.pos_encoder.pe[:8].sum().item(),
    }
